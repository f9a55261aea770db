/** The generic shape of every Kubernetes object kfmesh reads or writes. */
import { Label } from './vocabulary.ts';

/** A JSON value as Kubernetes objects hold them. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (a map of JSON values). */
export type JsonObject = { [key: string]: JsonValue };

/**
 * A JSON object of no particular kind: what kfmesh builds for its output where no typed model applies, and
 * reads where it only copies. Typed specs are read through model/specs.ts.
 */
export type JsonRecord = Record<string, unknown>;

/** Object metadata: the fields kfmesh reads and writes. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

/** A Kubernetes ownerReference. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any Kubernetes object: apiVersion, kind, metadata, then whatever the kind holds. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** The identity of an object: API group (empty for core), kind, namespace (empty if cluster-scoped), name. */
export interface ObjectRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * A namespace's labels as the API server keeps them: it sets `kubernetes.io/metadata.name` to the
 * namespace's name on every namespace (docs/semantics.md, NetworkPolicy), whatever was written.
 */
export function namespaceLabels(
  labels: Readonly<Record<string, string>>,
  namespace: string,
): Readonly<Record<string, string>> {
  return { ...labels, [Label.MetadataName]: namespace };
}

/** The API group of an apiVersion: the part before `/`, empty for the core group. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The identity of an object. */
export function refOf(obj: KubeObject): ObjectRef {
  return {
    group: groupOf(obj.apiVersion),
    kind: obj.kind,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
  };
}

/** An object's identity as one string, `group/Kind/namespace/name`: the key of maps of objects. */
export function objectKey(ref: ObjectRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** `Kind namespace/name` (or `Kind name` when cluster-scoped), as people write it in messages. */
export function describeRef(ref: ObjectRef): string {
  const where = ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
  return `${ref.kind} ${where}`;
}

/** Compares two refs by (group, kind, namespace, name): the order of every output kfmesh prints. */
export function compareRefs(a: ObjectRef, b: ObjectRef): number {
  return (
    compareStrings(a.group, b.group) ||
    compareStrings(a.kind, b.kind) ||
    compareStrings(a.namespace, b.namespace) ||
    compareStrings(a.name, b.name)
  );
}

/** Code-unit string order: the same on every machine and locale. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when the value is a plain object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The order key of a config object: creationTimestamp (empty sorts first), name, namespace. */
export function orderKey(object: KubeObject): string {
  const created =
    typeof object.metadata['creationTimestamp'] === 'string'
      ? (object.metadata['creationTimestamp'] as string)
      : '';
  return `${created}\u0000${object.metadata.name ?? ''}\u0000${object.metadata.namespace ?? ''}`;
}
