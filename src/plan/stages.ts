/**
 * Which step of a migration plan each change belongs to: the platform's steps, then each namespace's in
 * Istio's order (docs/semantics.md, "The migration"), then the platform's cleanup. The order of the
 * namespaces is chosen elsewhere (order.ts); here a change only learns its stage and its namespace.
 */
import { CanonicalLabelKeys } from '../model/sidecar.ts';
import { fieldsOf } from '../model/specs.ts';
import { GatewayClass, GroupKind, Label } from '../model/vocabulary.ts';
import { isPlainObject, refOf, type KubeObject, type ObjectRef } from '../model/object.ts';
import type { PatchOp } from './state.ts';

/** The stages of a plan, in the order they run. */
export const Stage = {
  /** What must be installed first; no change. */
  Prerequisites: 'prerequisites',
  /** The mesh config (sidecars accept HBONE), and the restart that applies it. */
  MeshConfig: 'mesh-config',
  /** New gateways and their routes and policies, and mesh-wide objects; the old ones keep serving. */
  Gateways: 'gateways',
  /** Per namespace: waypoints, routes for them, policies in their new form beside the old. */
  Prepare: 'prepare',
  UseWaypoint: 'use-waypoint',
  Ambient: 'ambient',
  Injection: 'injection',
  /** Per namespace: the pods restart, out of their sidecars. */
  Restart: 'restart',
  /** Per namespace: policies in their final form, sidecar-only objects gone. */
  Cleanup: 'cleanup',
  /** The old gateways, their routes and policies, once traffic comes through the new ones. */
  PlatformCleanup: 'platform-cleanup',
} as const;
export type Stage = (typeof Stage)[keyof typeof Stage];

/** The stages of one namespace, in order. */
export const namespaceStages: readonly Stage[] = [
  Stage.Prepare,
  Stage.UseWaypoint,
  Stage.Ambient,
  Stage.Injection,
  Stage.Restart,
  Stage.Cleanup,
];

/** Where a change goes: a stage, and the namespace for a namespace's stages (several: a step for a group). */
export interface Placement {
  stage: Stage;
  namespace?: string;
  namespaces?: string[];
}

const istioGateway: string = GroupKind.IstioGateway;
const virtualService: string = GroupKind.VirtualService;
const policyKinds = new Set<string>([GroupKind.AuthorizationPolicy, GroupKind.RequestAuthentication]);
const templateKinds = new Set<string>([GroupKind.Deployment, GroupKind.StatefulSet, GroupKind.DaemonSet]);
const carriedInjectedLabels = new Set<string>(CanonicalLabelKeys);
const waypointLabels = new Set<string>([
  Label.UseWaypoint,
  Label.UseWaypointNamespace,
  Label.IngressUseWaypoint,
]);
const injectionLabels = new Set<string>([Label.IstioInjection, Label.IstioRev]);

const kindOf = (r: ObjectRef) => `${r.group}/${r.kind}`;

/** The namespace a change concerns: a Namespace's own name, else the object's namespace. */
export function namespaceOf(ref: ObjectRef): string {
  return ref.group === '' && ref.kind === 'Namespace' ? ref.name : ref.namespace;
}

/** The context of the placement: the namespaces that move, and the mesh's root namespace. */
export interface StageContext {
  moving: ReadonlySet<string>;
  root: string;
  /** Whether the Gateway `ns/name` is a waypoint (in the platform before or after). */
  isWaypoint: (namespace: string, name: string) => boolean;
  /**
   * Whether a new policy would refuse, on the pods it selects while they still run sidecars, what they
   * take now: a DENY, or an ALLOW for pods no ALLOW policy applies to yet (ALLOW policies add up, and
   * with none every request is allowed). Such a policy guards the pods once they are ambient.
   */
  narrowsSidecars: (policy: KubeObject) => boolean;
}

/** Where a new object goes. */
export function placeAdded(object: KubeObject, ref: ObjectRef, ctx: StageContext): Placement {
  if (servesIngress(object, ctx)) return { stage: Stage.Gateways };
  const ns = namespaceOf(ref);
  if (!ctx.moving.has(ns)) return { stage: Stage.Gateways };
  // With the restart, before the pods go: ztunnel then enforces it from their first moment in ambient.
  if (isPolicy(ref) && !appliesOnlyByTarget(object) && ctx.narrowsSidecars(object))
    return { stage: Stage.Restart, namespace: ns };
  return { stage: Stage.Prepare, namespace: ns };
}

/** Where the deletion of an object goes. */
export function placeDeleted(ref: ObjectRef, ctx: StageContext): Placement {
  const ns = namespaceOf(ref);
  const kind = kindOf(ref);
  if (kind === istioGateway || kind === virtualService || !ctx.moving.has(ns))
    return { stage: Stage.PlatformCleanup };
  return { stage: Stage.Cleanup, namespace: ns };
}

/**
 * Where one operation of an object's change goes: a namespace's labels each in their own stage of Istio's
 * order; the mesh config first; a pod template with the restart; a policy in its final form at cleanup
 * (its new form was added beside the old one, see `plan.ts`); a NetworkPolicy before the namespace moves.
 */
export function placeChange(ref: ObjectRef, op: PatchOp, ctx: StageContext): Placement {
  const ns = namespaceOf(ref);
  const label = labelOf(op.path);
  if (label !== undefined && ctx.moving.has(ns)) {
    if (waypointLabels.has(label)) return { stage: Stage.UseWaypoint, namespace: ns };
    if (label === Label.DataplaneMode || label === Label.Mode) return { stage: Stage.Ambient, namespace: ns };
    if (injectionLabels.has(label)) return { stage: Stage.Injection, namespace: ns };
  }
  const kind = kindOf(ref);
  // An identity a policy newly admits comes with the new gateway or waypoint that carries it, before routes move.
  if (isPolicy(ref) && op.op === 'add' && /\/principals\/\d+$/.test(op.path))
    return { stage: Stage.Gateways };
  // A pod that opts out of ambient must say so before its namespace is labelled: the CNI enrols running pods.
  // The injector's canonical labels, written on a template for the NetworkPolicies that select by them,
  // change nothing while the pods still have sidecars (the injector wrote the same), and must be there
  // when they restart without: both before the move, where undoing them restarts pods still injected.
  const templateLabel = templateKinds.has(kind) ? labelOf(op.path, templateLabels) : undefined;
  if (
    templateLabel !== undefined &&
    (templateLabel === Label.DataplaneMode || carriedInjectedLabels.has(templateLabel)) &&
    ctx.moving.has(ns)
  )
    return { stage: Stage.Prepare, namespace: ns };
  if (kind === '/ConfigMap' && ref.namespace === ctx.root && ref.name === 'istio')
    return { stage: Stage.MeshConfig };
  if (!ctx.moving.has(ns)) return { stage: Stage.PlatformCleanup };
  if (templateKinds.has(kind)) return { stage: Stage.Restart, namespace: ns };
  if (kind === GroupKind.NetworkPolicy) return { stage: Stage.Prepare, namespace: ns };
  return { stage: Stage.Cleanup, namespace: ns };
}

/** Whether a policy's new form can stand beside its old one before the switch: it applies only at waypoints or gateways. */
export function appliesOnlyByTarget(object: KubeObject): boolean {
  const spec = fieldsOf(object, 'spec');
  return (
    policyKinds.has(kindOf(refOf(object))) &&
    (spec['targetRefs'] !== undefined || spec['targetRef'] !== undefined)
  );
}

export function isPolicy(ref: ObjectRef): boolean {
  return policyKinds.has(kindOf(ref));
}

/** An object for the ingress: a Gateway API gateway, a route or a policy bound to one. */
function servesIngress(object: KubeObject, ctx: StageContext): boolean {
  const kind = kindOf(refOf(object));
  const ns = object.metadata.namespace ?? '';
  const spec = fieldsOf(object, 'spec');
  if (kind === GroupKind.Gateway) return spec['gatewayClassName'] !== GatewayClass.Waypoint;
  const refs = [
    ...(Array.isArray(spec['parentRefs']) ? spec['parentRefs'] : []),
    ...(Array.isArray(spec['targetRefs']) ? spec['targetRefs'] : []),
    ...(isPlainObject(spec['targetRef']) ? [spec['targetRef']] : []),
  ];
  // A parentRef names a Gateway unless it says otherwise; a policy's targetRef always says.
  return refs.some(
    (r) =>
      isPlainObject(r) &&
      (r['kind'] ?? (kind.endsWith('Route') ? 'Gateway' : undefined)) === 'Gateway' &&
      !ctx.isWaypoint(typeof r['namespace'] === 'string' ? r['namespace'] : ns, String(r['name'] ?? '')),
  );
}

const objectLabels = '/metadata/labels';
const templateLabels = '/spec/template/metadata/labels';

/** The maps of labels whose changes are placed label by label. */
export const labelMaps = [objectLabels, templateLabels];

/** The label a JSON Patch operation sets or removes, if it touches one label of the map at `map`. */
function labelOf(path: string, map = objectLabels): string | undefined {
  const prefix = `${map}/`;
  if (!path.startsWith(prefix)) return undefined;
  return path.slice(prefix.length).replaceAll('~1', '/').replaceAll('~0', '~');
}
