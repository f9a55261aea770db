/**
 * Values worked out once per compiled mesh: route tables, sidecar scopes, indexes. A mesh is immutable once
 * compiled, so what is derived from it can be kept as long as the mesh is (a WeakMap: it goes with the mesh).
 * Each module declares its own memo with its own key and value types, so nothing is read back with a cast.
 */

/** How many values each named memo has made for a mesh (for tests that check work is done once). */
const made = new WeakMap<object, Map<string, number>>();

export class MeshMemo<K, V> {
  readonly #byMesh = new WeakMap<object, Map<K, V>>();

  /** What the memo holds, as `memoCounts` names it. */
  readonly name: string;

  constructor(name: string) {
    this.name = name;
  }

  /** The value for `key` in this mesh, made by `make` the first time it is asked for. */
  get(mesh: object, key: K, make: () => V): V {
    let values = this.#byMesh.get(mesh);
    if (!values) this.#byMesh.set(mesh, (values = new Map()));
    const known = values.get(key);
    if (known !== undefined || values.has(key)) return known as V;
    const value = make();
    values.set(key, value);
    let counts = made.get(mesh);
    if (!counts) made.set(mesh, (counts = new Map()));
    counts.set(this.name, (counts.get(this.name) ?? 0) + 1);
    return value;
  }
}

/** One value per mesh. */
export class MeshOnce<V> {
  readonly #memo: MeshMemo<undefined, V>;

  constructor(name: string) {
    this.#memo = new MeshMemo(name);
  }

  get(mesh: object, make: () => V): V {
    return this.#memo.get(mesh, undefined, make);
  }
}

/** How many values each memo has made for this mesh so far, by memo name. */
export function memoCounts(mesh: object): ReadonlyMap<string, number> {
  return new Map(made.get(mesh) ?? []);
}
