/** Maps from a key to the list of values filed under it, filled in place (no list copied per value). */

/** Appends `value` to the list under `key`, creating the list on first use. */
export function addTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
