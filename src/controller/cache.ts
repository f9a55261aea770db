/**
 * The controller's cache: the objects of every kind it watches, the objects kfmesh manages indexed by
 * their owner, the state of each kind's list, and the input generations that say when a namespace's
 * render is stale. Informers fill it, writes update it ahead of their watch events, and the reconciler
 * reads it. It does no I/O.
 */
import { fieldsOf } from '../model/specs.ts';
import type { KubeObject } from '../model/object.ts';
import { groupOf, isPlainObject } from '../model/object.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { statusWritten } from './permissions.ts';
import {
  isManaged,
  isRenderInput,
  MeshReady,
  ownerKey,
  ownerOf,
  parseOwnerKey,
  renderNamespaceOf,
  type OwnerKey,
} from './desired.ts';

/** What a kind's informer has achieved: its first list, and the error of its latest list when that failed. */
export interface KindState {
  /** The store the kind's objects go to (`group/Kind`). */
  store: string;
  /** Which objects of the store this list holds (all when a kind is listed whole). */
  holds: (object: KubeObject) => boolean;
  listed: boolean;
  failed: string | undefined;
  /** Resolves when the first list succeeds. */
  firstList: Promise<void>;
  listedOnce: () => void;
}

/** The owners that are objects of their own (with a status): InferenceServices and Profiles. */
export const ownerKinds: ReadonlySet<string> = new Set(statusWritten);

/** The kind each owner key names, as `group/Kind`. */
const ownerKindKeys: Readonly<Record<string, string>> = {
  InferenceService: GroupKind.InferenceService,
  Profile: GroupKind.Profile,
  Notebook: GroupKind.Notebook,
  Namespace: '/Namespace',
};

/** `group/Kind` of an object. */
export function kindKeyOf(object: KubeObject): string {
  return `${groupOf(object.apiVersion)}/${object.kind}`;
}

/** An object's key in its kind's store: `namespace/name`. */
function storeKey(object: { metadata?: { namespace?: string; name?: string } }): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

/** An object's identity across kinds: `group/Kind/namespace/name`. */
export function identity(object: KubeObject): string {
  return `${kindKeyOf(object)}/${storeKey(object)}`;
}

export class ObjectCache {
  readonly #stores = new Map<string, Map<string, KubeObject>>();
  readonly #kinds = new Map<string, KindState>();
  /** The objects kfmesh manages, by owner and identity. */
  readonly #managed = new Map<OwnerKey, Map<string, KubeObject>>();
  /** The input generation at which each namespace's render input last changed. */
  readonly #changedAt = new Map<string, number>();
  #sharedChangedAt = 0;
  #generation = 0;

  /**
   * Starts caching a kind, or a part of one (`part`: a name for the list, and the objects it holds, when
   * a kind is listed in parts, as ConfigMaps are, by the names the readers declare); the state says when
   * its first list is in.
   */
  addKind(kindKey: string, part?: { key: string; holds: (object: KubeObject) => boolean }): KindState {
    let listedOnce: () => void = () => undefined;
    const firstList = new Promise<void>((resolve) => (listedOnce = resolve));
    const state: KindState = {
      store: kindKey,
      holds: part?.holds ?? (() => true),
      listed: false,
      failed: undefined,
      firstList,
      listedOnce,
    };
    this.#kinds.set(part ? `${kindKey}#${part.key}` : kindKey, state);
    if (!this.#stores.has(kindKey)) this.#stores.set(kindKey, new Map());
    return state;
  }

  /** Whether a kind (`group/Kind`) is cached, whole or in parts. */
  hasKind(kindKey: string): boolean {
    return this.#stores.has(kindKey);
  }

  /** Resolves when every kind cached so far has listed once. */
  async firstLists(): Promise<void> {
    await Promise.all([...this.#kinds.values()].map((k) => k.firstList));
  }

  /** The input generation: moves with every change of a render's input. */
  get generation(): number {
    return this.#generation;
  }

  /** How many objects are cached. */
  get size(): number {
    return [...this.#stores.values()].reduce((n, store) => n + store.size, 0);
  }

  /** Whether a render of `namespace` made at `generation` still reflects its input. */
  fresh(namespace: string, generation: number): boolean {
    return generation >= this.#sharedChangedAt && generation >= (this.#changedAt.get(namespace) ?? 0);
  }

  /**
   * A kind's list (`group/Kind`, or `group/Kind#part`) is in: what it holds of its store becomes exactly
   * `items` (an informer reports only what changed against its own copy), and every render is stale.
   */
  relisted(listKey: string, items: readonly KubeObject[]): void {
    const state = this.#kinds.get(listKey);
    const store = state && this.#stores.get(state.store);
    if (!store || !state) return;
    state.failed = undefined;
    state.listed = true;
    state.listedOnce();
    for (const [key, old] of store)
      if (state.holds(old)) {
        this.#unindex(old);
        store.delete(key);
      }
    for (const item of items) if (state.holds(item)) this.#put(store, storeKey(item), item);
    this.#sharedChangedAt = ++this.#generation;
  }

  /** A kind's list failed; returns whether with another error than the last time (to say it once). */
  listFailed(kindKey: string, error: string): boolean {
    const state = this.#kinds.get(kindKey);
    if (!state || state.failed === error) return false;
    state.failed = error;
    return true;
  }

  /** Whether a kind's latest list failed. */
  failing(kindKey: string): boolean {
    return this.#kinds.get(kindKey)?.failed !== undefined;
  }

  /**
   * Puts an object into its store (or takes it out) and into the index of managed objects; when that
   * changes a render's input, moves the input generation for the namespace that reads it (or for all).
   * Returns whether the input changed.
   */
  set(object: KubeObject, deleted: boolean): boolean {
    const store = this.#stores.get(kindKeyOf(object));
    if (!store) return false;
    const key = storeKey(object);
    const old = store.get(key);
    if (old) this.#unindex(old);
    if (deleted) store.delete(key);
    else this.#put(store, key, object);
    const now = deleted ? undefined : object;
    if (!(isInput(old) || isInput(now)) || sameInput(old, now)) return false;
    const namespace = renderNamespaceOf(object);
    this.#generation++;
    if (namespace === undefined) this.#sharedChangedAt = this.#generation;
    else this.#changedAt.set(namespace, this.#generation);
    return true;
  }

  /**
   * Takes what the server answered to a write (or a deletion) before its watch event arrives, so that a
   * reconcile in between doesn't write it again. A newer version already cached is kept.
   */
  remember(object: KubeObject, deleted = false): void {
    const store = this.#stores.get(kindKeyOf(object));
    if (!store || !isPlainObject(object.metadata)) return;
    const old = store.get(storeKey(object));
    if (old && !deleted && newerOrSame(old, object)) return;
    this.set(object, deleted);
  }

  /** The cached version of an object (at whatever version the server prefers), by kind, namespace and name. */
  get(object: KubeObject): KubeObject | undefined {
    return this.#stores.get(kindKeyOf(object))?.get(storeKey(object));
  }

  /** Every cached object of a kind (`group/Kind`). */
  ofKind(kindKey: string): Iterable<KubeObject> {
    return this.#stores.get(kindKey)?.values() ?? [];
  }

  /** Every cached object. */
  *objects(): Iterable<KubeObject> {
    for (const store of this.#stores.values()) yield* store.values();
  }

  /** The cached InferenceService or Profile an owner key names (other owners have no object of their own). */
  ownerObject(owner: OwnerKey): KubeObject | undefined {
    const { kind, namespace, name } = parseOwnerKey(owner);
    const kindKey = [...ownerKinds].find((k) => k.endsWith(`/${kind}`));
    return kindKey ? this.#stores.get(kindKey)?.get(`${namespace}/${name}`) : undefined;
  }

  /** The live objects kfmesh manages for an owner. */
  managedBy(owner: OwnerKey): KubeObject[] {
    return [...(this.#managed.get(owner)?.values() ?? [])];
  }

  /** The owners kfmesh has live objects for. */
  managedOwners(): Iterable<OwnerKey> {
    return this.#managed.keys();
  }

  /** The owners that are objects here: InferenceServices, Profiles, Notebooks, and namespaces kfmesh labelled. */
  ownersCached(): OwnerKey[] {
    const out: OwnerKey[] = [];
    for (const kindKey of [...ownerKinds, GroupKind.Notebook])
      for (const o of this.ofKind(kindKey))
        out.push(ownerKey(o.kind, o.metadata.namespace, o.metadata.name ?? ''));
    for (const o of this.ofKind('/Namespace'))
      if (isManaged(o)) out.push(ownerKey('Namespace', undefined, o.metadata.name ?? ''));
    return out;
  }

  /** Why the cache is not complete yet: the kinds still waiting for a first list (with their error). */
  notListed(): string[] {
    return this.#kindsWhere(
      (state) => !state.listed,
      (state) => state.failed,
    );
  }

  /** The kinds whose latest list failed, with the error. */
  failingKinds(): string[] {
    return this.#kindsWhere(
      (state) => state.failed !== undefined,
      (state) => state.failed,
    );
  }

  /**
   * Why the view of an owner is partial, or undefined when it is whole: a kind whose latest list failed
   * or that has not listed yet, or an owner of a kind that is not watched (not served, or not yet).
   */
  partialView(owner: OwnerKey): string | undefined {
    const incomplete = this.#kindsWhere(
      (state) => state.failed !== undefined || !state.listed,
      (state) => state.failed ?? 'not listed yet',
    );
    if (incomplete.length > 0) return `lists incomplete: ${incomplete.join('; ')}`;
    const { kind } = parseOwnerKey(owner);
    const kindKey = ownerKindKeys[kind];
    if (!kindKey || !this.#kinds.has(kindKey)) return `${kind} is not a kind the server serves now`;
    return undefined;
  }

  /** The kinds in a state, sorted, each as `kind (reason)` or just `kind` when there is no reason. */
  #kindsWhere(
    which: (state: KindState) => boolean,
    reason: (state: KindState) => string | undefined,
  ): string[] {
    return [...this.#kinds]
      .filter(([, state]) => which(state))
      .map(([kind, state]) => {
        const why = reason(state);
        return why === undefined ? kind : `${kind} (${why})`;
      })
      .sort();
  }

  /** Stores an object and indexes it under its owner when kfmesh manages it. */
  #put(store: Map<string, KubeObject>, key: string, object: KubeObject): void {
    store.set(key, object);
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    if (!owner) return;
    const objects = this.#managed.get(owner) ?? new Map<string, KubeObject>();
    objects.set(identity(object), object);
    this.#managed.set(owner, objects);
  }

  #unindex(object: KubeObject): void {
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    const objects = owner ? this.#managed.get(owner) : undefined;
    if (!owner || !objects) return;
    objects.delete(identity(object));
    if (objects.size === 0) this.#managed.delete(owner);
  }
}

function isInput(object: KubeObject | undefined): boolean {
  return object !== undefined && isRenderInput(object);
}

/** Is `a` at least as new as `b` (by resourceVersion, when both are numbers as etcd's are)? */
function newerOrSame(a: KubeObject, b: KubeObject): boolean {
  const [x, y] = [Number(a.metadata.resourceVersion), Number(b.metadata.resourceVersion)];
  return Number.isInteger(x) && Number.isInteger(y) && x >= y;
}

/** Do two versions of an object say the same to the render (ignoring versions, field managers and MeshReady)? */
function sameInput(a: KubeObject | undefined, b: KubeObject | undefined): boolean {
  if (!a || !b) return a === b;
  return inputView(a) === inputView(b);
}

function inputView(object: KubeObject): string {
  const {
    resourceVersion: _rv,
    managedFields: _mf,
    ...metadata
  } = object.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  // No status and an empty one are the same input.
  const status = { ...fieldsOf(object, 'status') };
  if (Array.isArray(status['conditions']))
    status['conditions'] = (status['conditions'] as { type?: string }[]).filter((c) => c.type !== MeshReady);
  return JSON.stringify({ ...object, metadata, status });
}
