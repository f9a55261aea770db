/**
 * Reads the caller knows succeed (an index inside a list it built, a key it put in a map): under
 * `noUncheckedIndexedAccess` each read says it may miss, and a cast would hide a miss that is a bug.
 * These say so instead, with a RangeError.
 */

/** The element at an index the caller knows is there. */
export function at<T>(list: ArrayLike<T>, index: number): T {
  const value = list[index];
  if (value === undefined) throw new RangeError(`index ${index} outside a list of ${list.length}`);
  return value;
}

/** The value of a key the caller knows the map holds. */
export function got<K, V>(map: ReadonlyMap<K, V>, key: K): V {
  const value = map.get(key);
  if (value === undefined) throw new RangeError(`no entry for ${String(key)}`);
  return value;
}
