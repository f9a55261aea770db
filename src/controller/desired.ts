/**
 * What the controller does, as pure functions over a snapshot: the desired objects grouped by the
 * object they are for (an InferenceService, a Profile, a Notebook, a namespace), each marked as kfmesh's;
 * whether a live object already holds what is desired; which live objects kfmesh owns and no longer
 * wants; and the `MeshReady` condition of each InferenceService and Profile.
 */
import type { KubeObject } from '../model/object.ts';
import { groupOf, isPlainObject } from '../model/object.ts';
import { formatObjectProblem } from '../model/errors.ts';
import { renderConfigInputs, type RenderResult } from '../render/desired-state.ts';
import { isConfigMapOfAny, type ConfigMapInput } from '../model/inputs.ts';
import { GatewayClass, GroupKind, Label, ManagedByValue } from '../model/vocabulary.ts';
import { gatewayClassOf, fieldsOf } from '../model/specs.ts';
import { ContestLimit } from './contest.ts';

/** The owner of a group of desired objects: `Kind/namespace/name` (namespace empty when cluster-scoped). */
export type OwnerKey = string;

const clusterScopedOwners = new Set(['Profile', 'Namespace']);

/** `Kind/namespace/name`. */
export function ownerKey(kind: string, namespace: string | undefined, name: string): OwnerKey {
  return `${kind}/${clusterScopedOwners.has(kind) ? '' : (namespace ?? '')}/${name}`;
}

export function parseOwnerKey(key: OwnerKey): { kind: string; namespace: string; name: string } {
  const [kind = '', namespace = '', ...rest] = key.split('/');
  return { kind, namespace, name: rest.join('/') };
}

/**
 * The owner of a generated or live object: its controller ownerReference, else kfmesh's owner labels,
 * else (an object kfmesh generates for a namespace, such as its labels) the namespace.
 */
export function ownerOf(object: KubeObject): OwnerKey | undefined {
  const controller = (object.metadata.ownerReferences ?? []).find((r) => r.controller);
  if (controller) return ownerKey(controller.kind, object.metadata.namespace, controller.name);
  const labels = object.metadata.labels ?? {};
  const kind = labels[Label.OwnerKind];
  const name = labels[Label.OwnerName];
  if (kind && name) return ownerKey(kind, labels[Label.OwnerNamespace], name);
  if (object.kind === 'Namespace' && groupOf(object.apiVersion) === '')
    return ownerKey('Namespace', undefined, object.metadata.name ?? '');
  return undefined;
}

/** The namespace an owner's objects are in: its own, or for a Profile or Namespace, the one it names. */
export function ownerNamespace(owner: OwnerKey): string {
  const { namespace, name } = parseOwnerKey(owner);
  return namespace || name;
}

/** A ConfigMap the render reads settings from (`renderConfigInputs`: the readers' own declarations). */
export function isPlatformConfig(object: KubeObject): boolean {
  return isConfigMapOfAny(renderConfigInputs, object);
}

/** A part of a kind the informers list and watch on its own: a selection the API server makes. */
export interface ListPart {
  /** Names the part in the cache and in messages (`name=istio`, `namespace=kubeflow`). */
  key: string;
  /** Listed and watched in this namespace only (else in every namespace the controller reads). */
  namespace?: string;
  /** The API server's field selector (`metadata.name=istio`). */
  fieldSelector?: string;
  /** The objects the part holds (of those the server sends). */
  holds: (object: KubeObject) => boolean;
}

/**
 * The ConfigMaps the controller lists, in parts the API server selects, so that it never lists, watches or
 * caches the ConfigMaps tenants write: one part per name a reader declares (a field selector on the name,
 * in every namespace), and for the names declared by their start (kustomize's hashed names), the
 * ConfigMaps of the reader's namespace whose name starts so.
 */
export function configMapParts(inputs: readonly ConfigMapInput[] = renderConfigInputs): ListPart[] {
  const exact = new Set(inputs.filter((i) => !i.prefix).map((i) => i.name));
  const parts: ListPart[] = [...exact].sort().map((name) => ({
    key: `name=${name}`,
    fieldSelector: `metadata.name=${name}`,
    holds: (o) => o.metadata.name === name,
  }));
  const prefixed = inputs.filter((i) => i.prefix);
  for (const namespace of [...new Set(prefixed.map((i) => i.namespace))].sort()) {
    const here = prefixed.filter((i) => i.namespace === namespace);
    parts.push({
      key: `namespace=${namespace}`,
      namespace,
      holds: (o) =>
        o.metadata.namespace === namespace && !exact.has(o.metadata.name ?? '') && isConfigMapOfAny(here, o),
    });
  }
  return parts;
}

/** The kinds `desiredState` reads (`group/Kind`); of ConfigMaps, only the platform's settings. */
const renderReads = new Set([
  '/Namespace',
  '/ConfigMap',
  '/Service',
  GroupKind.Profile,
  GroupKind.Notebook,
  GroupKind.InferenceService,
  GroupKind.Gateway,
  GroupKind.IstioGateway,
]);

/**
 * Is this object input of the render? One of the kinds it reads and not kfmesh's own output, except
 * Namespaces, whose own labels (the mode label) are input though kfmesh sets some of them.
 */
export function isRenderInput(object: KubeObject): boolean {
  const kindKey = `${groupOf(object.apiVersion)}/${object.kind}`;
  if (!renderReads.has(kindKey) || (kindKey === '/ConfigMap' && !isPlatformConfig(object))) return false;
  return kindKey === '/Namespace' || !isManaged(object);
}

/**
 * Which namespace's render reads this object: the namespace it is in, or that a Namespace or Profile
 * names; undefined for what every namespace's render reads (the platform's settings, the ingress gateways, other cluster-scoped
 * objects). The desired objects of a namespace depend only on its own objects and the shared ones, so a
 * change re-renders only its namespace.
 */
export function renderNamespaceOf(object: KubeObject): string | undefined {
  if (isPlatformConfig(object) || isIngressGateway(object)) return undefined;
  if (object.metadata.namespace) return object.metadata.namespace;
  if ((object.kind === 'Namespace' && groupOf(object.apiVersion) === '') || object.kind === 'Profile')
    return object.metadata.name;
  return undefined;
}

/**
 * An ingress gateway (an Istio Gateway, or a Gateway API Gateway other than a waypoint): every
 * namespace's ambient owner policy names the ingress gateways the platform has.
 */
function isIngressGateway(object: KubeObject): boolean {
  const kindKey = `${groupOf(object.apiVersion)}/${object.kind}`;
  if (kindKey === GroupKind.IstioGateway) return true;
  return kindKey === GroupKind.Gateway && gatewayClassOf(object) !== GatewayClass.Waypoint;
}

/** The render input of one namespace: its own objects and the shared ones. */
export function namespaceInput(objects: Iterable<KubeObject>, namespace: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const o of objects) {
    const ns = renderNamespaceOf(o);
    if (ns === undefined || ns === namespace) out.push(o);
  }
  return out;
}

/** Is this live object one kfmesh manages (and so may change or delete)? */
export function isManaged(object: KubeObject): boolean {
  return object.metadata.labels?.[Label.ManagedBy] === ManagedByValue;
}

/** The desired objects by owner, each labelled as kfmesh's and with its owner. */
export function desiredByOwner(result: RenderResult): Map<OwnerKey, KubeObject[]> {
  const out = new Map<OwnerKey, KubeObject[]>();
  for (const object of result.objects) {
    const owner = ownerOf(object) ?? ownerKey('Namespace', undefined, object.metadata.namespace ?? '');
    const { kind, namespace, name } = parseOwnerKey(owner);
    const marked: KubeObject = {
      ...object,
      metadata: {
        ...object.metadata,
        labels: {
          ...object.metadata.labels,
          [Label.ManagedBy]: ManagedByValue,
          [Label.OwnerKind]: kind,
          ...(namespace ? { [Label.OwnerNamespace]: namespace } : {}),
          [Label.OwnerName]: name,
        },
      },
    };
    out.set(owner, [...(out.get(owner) ?? []), marked]);
  }
  return out;
}

/** A desired object without the labels that mark it as kfmesh's (what another owner's object would have to hold). */
export function unmarked(object: KubeObject): KubeObject {
  const marks = new Set<string>([Label.ManagedBy, Label.OwnerKind, Label.OwnerNamespace, Label.OwnerName]);
  const labels = Object.fromEntries(
    Object.entries(object.metadata.labels ?? {}).filter(([k]) => !marks.has(k)),
  );
  const { labels: _marked, ...metadata } = object.metadata;
  return { ...object, metadata: Object.keys(labels).length > 0 ? { ...metadata, labels } : metadata };
}

/** Does `live` hold every field of `desired` with the same value (what server-side apply would set)? */
export function holds(live: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return false;
    return desired.every((d, i) => holds(live[i], d));
  }
  if (isPlainObject(desired)) {
    if (!isPlainObject(live)) return false;
    return Object.entries(desired).every(([k, v]) => holds(live[k], v));
  }
  return live === desired;
}

/** A status condition as Kubernetes writes them. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

export const MeshReady = 'MeshReady';

/**
 * The `MeshReady` condition of each InferenceService and Profile the render looked at: False with reason
 * InvalidSpec (naming the field) when it could not be rendered, else True with the count of its objects.
 */
export function meshReadyConditions(
  result: RenderResult,
  owners: readonly OwnerKey[],
): Map<OwnerKey, Condition> {
  const problems = new Map<OwnerKey, string>();
  for (const p of result.problems) {
    const o = p.context.object;
    if (o) problems.set(ownerKey(o.kind, o.namespace, o.name), formatObjectProblem(p));
  }
  const counts = new Map<OwnerKey, number>();
  for (const object of result.objects) {
    const owner = ownerOf(object);
    if (owner) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  const out = new Map<OwnerKey, Condition>();
  for (const owner of owners) {
    const problem = problems.get(owner);
    out.set(
      owner,
      problem
        ? { type: MeshReady, status: 'False', reason: 'InvalidSpec', message: problem }
        : {
            type: MeshReady,
            status: 'True',
            reason: 'Applied',
            message: `${counts.get(owner) ?? 0} mesh object(s) applied`,
          },
    );
  }
  return out;
}

/** An object kfmesh needs that someone else holds: `Kind namespace/name`, and its controlling owner if it has one. */
export interface NotOurs {
  object: string;
  /** `Kind namespace/name` of the owner whose controller writes the object (its controller ownerReference). */
  controlledBy?: string;
  /** kfmesh's object, which this field manager keeps changing back: kfmesh stopped restoring it. */
  contestedBy?: string;
}

/** The controller ownerReference of a live object, as `Kind namespace/name`. */
export function controllerOf(live: KubeObject): string | undefined {
  const ref = live.metadata.ownerReferences?.find((r) => r.controller === true);
  return ref ? `${ref.kind} ${live.metadata.namespace ?? ''}/${ref.name}` : undefined;
}

/**
 * `MeshReady` False with reason NotManaged: objects the owner needs belong to someone else and lack what
 * kfmesh would apply. One another controller writes is left to it (taking it over would start a tug of
 * war), and the message says what to change there; any other can be handed over. Reason Contested when
 * kfmesh stopped restoring one of its own objects that another writer keeps changing back.
 */
export function notManaged(objects: readonly NotOurs[]): Condition {
  const parts = objects.map(({ object, controlledBy, contestedBy }) => {
    if (contestedBy)
      return `${object}: changed back by ${contestedBy} each time kfmesh restored it (${ContestLimit} times within a minute); kfmesh stops restoring it, to end the tug of war: change what ${contestedBy} writes, or leave the object to it`;
    if (!controlledBy)
      return `${object}: exists without the label ${Label.ManagedBy}=${ManagedByValue} and differs from what kfmesh would apply; kfmesh does not change objects it did not create (delete it, or label it to hand it over)`;
    const kserve = controlledBy.startsWith('InferenceService ')
      ? ' (KServe 0.14 and later bind their VirtualServices to mesh themselves: upgrade KServe)'
      : '';
    return `${object}: written by the controller of ${controlledBy} and differs from what kfmesh would apply; kfmesh leaves it to that controller, which would write it back: change what that controller writes${kserve}`;
  });
  const reason = objects.some((o) => o.contestedBy) ? 'Contested' : 'NotManaged';
  return { type: MeshReady, status: 'False', reason, message: parts.join('; ') };
}

/** The conditions with `condition` set (its transition time kept when its status did not change). */
export function withCondition(
  conditions: readonly Condition[],
  condition: Condition,
  now: string,
): Condition[] {
  const previous = conditions.find((c) => c.type === condition.type);
  const next: Condition = {
    ...condition,
    lastTransitionTime:
      previous && previous.status === condition.status && previous.lastTransitionTime
        ? previous.lastTransitionTime
        : now,
  };
  return [...conditions.filter((c) => c.type !== condition.type), next];
}

/** Is `condition` already what `conditions` say (ignoring the transition time)? */
export function hasCondition(conditions: readonly Condition[], condition: Condition): boolean {
  const c = conditions.find((x) => x.type === condition.type);
  return (
    c !== undefined &&
    c.status === condition.status &&
    c.reason === condition.reason &&
    c.message === condition.message
  );
}

/** A condition list from an object's status, as far as it is one. */
export function conditionsOf(object: KubeObject | undefined): Condition[] {
  const status = object ? fieldsOf(object, 'status') : {};
  return Array.isArray(status['conditions']) ? (status['conditions'] as Condition[]) : [];
}
