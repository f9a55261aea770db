/**
 * The snapshot: an indexed, read-only view of a cluster's objects. Every generator, the simulator, the
 * analyzer and the controller read the cluster through it.
 */
import { formatLocation, type SourceLocation } from '../model/errors.ts';
import {
  compareRefs,
  describeRef,
  objectKey,
  refOf,
  type KubeObject,
  type ObjectRef,
} from '../model/object.ts';
import type { FieldPath, LoadedObject } from './parse.ts';
import type { GroupKindKey } from '../model/vocabulary.ts';
import { formatFieldPath, typeProblem, type TypeProblem } from './schema.ts';
import type { ObjectProblem } from '../model/errors.ts';

/**
 * The type problem of a (frozen) object, checked once per object: snapshots are made again and again of
 * the same objects (a namespace's render in the controller, every state of a migration plan).
 */
const checked = new WeakMap<KubeObject, TypeProblem | null>();
function typeProblemOf(object: KubeObject): TypeProblem | undefined {
  let problem = checked.get(object);
  if (problem === undefined) {
    problem = typeProblem(object, object.apiVersion, object.kind) ?? null;
    checked.set(object, problem);
  }
  return problem ?? undefined;
}

/** A label selector in its simple form: every key must carry exactly that value. */
export type LabelMatch = Readonly<Record<string, string>>;

const kindKey = (group: string, kind: string): GroupKindKey => `${group}/${kind}`;

/** `group/Kind` split at its last slash (a group has dots, never a slash). */
function splitGroupKind(groupKind: GroupKindKey): [group: string, kind: string] {
  const slash = groupKind.lastIndexOf('/');
  return [groupKind.slice(0, slash), groupKind.slice(slash + 1)];
}

/** An object given again, replacing an earlier definition. */
export interface Replacement {
  object: ObjectRef;
  location: SourceLocation;
  previous?: SourceLocation;
}

/** A note for people: `file:line: Kind ns/name replaces the definition at file:line`. */
export function describeReplacement(r: Replacement): string {
  return `${formatLocation(r.location)}: ${describeRef(r.object)} replaces the definition at ${r.previous ? formatLocation(r.previous) : 'an earlier input'}`;
}

/**
 * All replacements in one line: how many, and which file replaced definitions of which (`b.yaml over
 * a.yaml: 15`), the pairs with most first, at most three named.
 */
export function summarizeReplacements(replacements: readonly Replacement[]): string {
  const pairs = new Map<string, number>();
  for (const r of replacements) {
    const pair = `${r.location.file} over ${r.previous?.file ?? 'an earlier input'}`;
    pairs.set(pair, (pairs.get(pair) ?? 0) + 1);
  }
  const named = [...pairs].sort(([a, m], [b, n]) => n - m || a.localeCompare(b));
  const shown = named.slice(0, 3).map(([pair, n]) => `${pair}: ${n}`);
  if (named.length > 3) shown.push(`${named.length - 3} more pairs of files`);
  const count = replacements.length;
  return `${count} object${count === 1 ? ' is' : 's are'} given again, the later definition replacing the earlier (${shown.join('; ')})`;
}

/** An object a snapshot left out, and why: the field of the wrong type. */
export interface SnapshotProblem extends ObjectProblem {
  object: KubeObject;
}

/** An indexed, read-only set of Kubernetes objects. */
export class Snapshot {
  readonly #objects: readonly KubeObject[] = [];
  readonly #byKind = new Map<string, KubeObject[]>();
  readonly #byKey = new Map<string, KubeObject>();
  readonly #sources = new WeakMap<KubeObject, LoadedObject>();
  #namespaces: ReadonlySet<string> | undefined;
  /** Objects that replaced an earlier definition of the same object, in input order. */
  readonly replacements: Replacement[] = [];
  /**
   * Objects left out because a field has a type its kind's schema refuses (load/schema.ts), each at the
   * field: whatever source they came from (files, a cluster, the controller's cache), the objects the
   * snapshot holds have the types the typed accessors of `model/specs.ts` assume.
   */
  readonly problems: SnapshotProblem[] = [];

  /**
   * Builds a snapshot. An object given again (same group, kind, namespace, name) replaces the earlier one,
   * as `kubectl apply -f a -f b` would; every replacement is listed in `replacements`.
   */
  constructor(loaded: readonly LoadedObject[]) {
    for (const entry of loaded) {
      const object = deepFreeze(entry.object);
      const problem = typeProblemOf(object);
      if (problem) {
        this.problems.push({
          object,
          context: {
            location: entry.locate(problem.path),
            object: refOf(object),
            field: formatFieldPath(problem.path),
          },
          message: problem.message,
        });
        continue;
      }
      const ref = refOf(object);
      const key = objectKey(ref);
      const earlier = this.#byKey.get(key);
      if (earlier) {
        const previous = this.#sources.get(earlier)?.location;
        this.replacements.push({ object: ref, location: entry.location, ...(previous ? { previous } : {}) });
      }
      this.#byKey.set(key, object);
      this.#sources.set(object, entry);
    }
    for (const object of this.#byKey.values()) {
      const ref = refOf(object);
      const kk = kindKey(ref.group, ref.kind);
      const list = this.#byKind.get(kk) ?? [];
      list.push(object);
      this.#byKind.set(kk, list);
    }
    for (const list of this.#byKind.values()) list.sort((a, b) => compareRefs(refOf(a), refOf(b)));
    this.#objects = [...this.#byKey.values()].sort((a, b) => compareRefs(refOf(a), refOf(b)));
  }

  /** Builds a snapshot from objects that have no source file (generated, or from a live cluster). */
  static of(objects: readonly KubeObject[], sourceName = '<memory>'): Snapshot {
    return new Snapshot(
      objects.map((object) => ({
        object,
        location: { file: sourceName },
        locate: () => ({ file: sourceName }),
      })),
    );
  }

  /** Every object, ordered by (group, kind, namespace, name). */
  all(): readonly KubeObject[] {
    return this.#objects;
  }

  /** The objects of one kind (`group/Kind`), optionally in one namespace, ordered by namespace and name. */
  list<T extends KubeObject = KubeObject>(groupKind: GroupKindKey, namespace?: string): readonly T[] {
    const list = (this.#byKind.get(groupKind) ?? []) as T[];
    return namespace === undefined ? list : list.filter((o) => (o.metadata.namespace ?? '') === namespace);
  }

  /** True when the snapshot holds an object of this `group/Kind` (the core group empty: `/Service`). */
  holds(groupKind: string): boolean {
    return this.#byKind.has(groupKind);
  }

  /**
   * The namespaces the input shows: those of its Namespace objects and those its objects name in their
   * metadata.
   */
  namespaces(): ReadonlySet<string> {
    if (this.#namespaces) return this.#namespaces;
    const names = new Set<string>();
    for (const ns of this.list('/Namespace')) names.add(ns.metadata.name ?? '');
    for (const object of this.#objects) if (object.metadata.namespace) names.add(object.metadata.namespace);
    return (this.#namespaces = names);
  }

  /**
   * One object by identity. An object the input gives without a namespace is found in `default`, where
   * `kubectl apply` would put it.
   */
  get<T extends KubeObject = KubeObject>(
    groupKind: GroupKindKey,
    namespace: string,
    name: string,
  ): T | undefined {
    const [group, kind] = splitGroupKind(groupKind);
    const found = this.#byKey.get(objectKey({ group, kind, namespace, name }));
    if (found || namespace !== 'default') return found as T | undefined;
    return this.#byKey.get(objectKey({ group, kind, namespace: '', name })) as T | undefined;
  }

  /** The objects of one kind whose labels carry every key/value of `match`. */
  withLabels<T extends KubeObject = KubeObject>(
    groupKind: GroupKindKey,
    match: LabelMatch,
    namespace?: string,
  ): T[] {
    return this.list<T>(groupKind, namespace).filter((o) => labelsMatch(o.metadata.labels, match));
  }

  /** Where an object (or one of its fields) is written, when it came from a file. */
  locate(object: KubeObject, path: FieldPath = []): SourceLocation | undefined {
    return this.#sources.get(object)?.locate(path);
  }

  /** A short description of an object for messages. */
  describe(object: KubeObject): string {
    return describeRef(refOf(object));
  }
}

/** True when `labels` carry every key/value of `match` (an empty match selects everything). */
export function labelsMatch(
  labels: Readonly<Record<string, string>> | undefined,
  match: LabelMatch,
): boolean {
  return Object.entries(match).every(([k, v]) => labels?.[k] === v);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
