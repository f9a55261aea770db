/**
 * Ambient mode's control-plane view (docs/semantics.md, Ambient enrollment and waypoints): waypoints and which services use
 * them, and the L4 form of AuthorizationPolicies that ztunnel enforces.
 */
import { specOf } from '../model/specs.ts';
import type { KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import { policySpec, ruleMatches, targetRefsOf, type AuthzRequest, type AuthzRule } from './authorization.ts';
import type { MeshService } from './services.ts';
import type { Workload } from './workloads.ts';
import { Label, GatewayClass, GroupKind } from '../model/vocabulary.ts';

/** A waypoint: its Gateway, the traffic it takes, and the proxy that runs it. */
export interface Waypoint {
  namespace: string;
  name: string;
  /** `istio.io/waypoint-for`: service (default), workload, all, none. */
  trafficType: string;
  /** Namespaces whose objects may use it (from its HBONE listener's allowedRoutes; `Same` by default). */
  allows: (namespace: string) => boolean;
  workload: Workload;
  gateway: KubeObject;
}

/** The waypoints of the mesh, by `namespace/name`; `workloads` holds the waypoint pods (real or synthesized). */
export function waypointsFrom(snapshot: Snapshot, workloads: readonly Workload[]): Map<string, Waypoint> {
  const out = new Map<string, Waypoint>();
  const byGateway = new Map<string, Workload>();
  for (const w of workloads) {
    const gatewayName = w.labels[Label.GatewayName];
    const key = `${w.namespace}/${gatewayName}`;
    if (gatewayName !== undefined && !byGateway.has(key)) byGateway.set(key, w);
  }
  for (const gateway of snapshot.list(GroupKind.Gateway)) {
    const spec = specOf(gateway, 'gateway.networking.k8s.io/Gateway');
    if (spec.gatewayClassName !== GatewayClass.Waypoint) continue;
    const namespace = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    const workload = byGateway.get(`${namespace}/${name}`);
    if (!workload) continue;
    const from =
      spec.listeners?.find((l) => l.protocol === 'HBONE')?.allowedRoutes?.namespaces?.from ?? 'Same';
    out.set(`${namespace}/${name}`, {
      namespace,
      name,
      trafficType: gateway.metadata.labels?.[Label.WaypointFor] ?? 'service',
      allows: (ns) => from === 'All' || ns === namespace,
      workload,
      gateway,
    });
  }
  return out;
}

/**
 * The waypoint a service's traffic goes through (`fetchWaypointForTarget`): the Service's own
 * `istio.io/use-waypoint` label beats its namespace's; `none` opts out; `istio.io/use-waypoint-namespace`
 * names another namespace, allowed only when that waypoint's listener admits this one; the waypoint must
 * take service traffic (`service` or `all`).
 */
export function waypointForService(
  snapshot: Snapshot,
  waypoints: ReadonlyMap<string, Waypoint>,
  service: MeshService,
): Waypoint | undefined {
  return waypointFor(snapshot, waypoints, service, 'service');
}

/**
 * The waypoint that takes traffic addressed to a pod itself, by the same labels on the pod and its
 * namespace; the waypoint must take workload traffic (`workload` or `all`). A `service` waypoint never
 * sees requests addressed to pods.
 */
export function waypointForWorkload(
  snapshot: Snapshot,
  waypoints: ReadonlyMap<string, Waypoint>,
  pod: Workload,
): Waypoint | undefined {
  return waypointFor(snapshot, waypoints, pod, 'workload');
}

function waypointFor(
  snapshot: Snapshot,
  waypoints: ReadonlyMap<string, Waypoint>,
  target: { namespace: string; labels: Readonly<Record<string, string>> },
  traffic: 'service' | 'workload',
): Waypoint | undefined {
  const resolved = resolveWaypoint(snapshot, waypoints, target, traffic);
  return resolved.outcome === 'used' ? resolved.waypoint : undefined;
}

/** How a target's `istio.io/use-waypoint` resolves, and why no waypoint takes its traffic where none does. */
export type WaypointResolution =
  | { outcome: 'none-named' | 'opted-out' }
  | { outcome: 'missing'; name: string; namespace: string; labelledOn: 'own' | 'namespace' }
  | {
      outcome: 'used' | 'not-admitted' | 'wrong-traffic';
      name: string;
      namespace: string;
      labelledOn: 'own' | 'namespace';
      waypoint: Waypoint;
    };

/**
 * The waypoint a target (a Service, or a pod for traffic addressed to it) names, and whether it takes the
 * target's traffic: it must exist, admit the target's namespace, and take that traffic type.
 */
export function resolveWaypoint(
  snapshot: Snapshot,
  waypoints: ReadonlyMap<string, Waypoint>,
  target: { namespace: string; labels: Readonly<Record<string, string>> },
  traffic: 'service' | 'workload',
): WaypointResolution {
  const nsLabels = snapshot.get(GroupKind.Namespace, '', target.namespace)?.metadata.labels ?? {};
  const own = target.labels[Label.UseWaypoint];
  const name = own ?? nsLabels[Label.UseWaypoint];
  if (!name) return { outcome: 'none-named' };
  if (name === 'none') return { outcome: 'opted-out' };
  const labelledOn = own !== undefined ? 'own' : 'namespace';
  const namespace =
    (own !== undefined ? target.labels[Label.UseWaypointNamespace] : nsLabels[Label.UseWaypointNamespace]) ??
    target.namespace;
  const waypoint = waypoints.get(`${namespace}/${name}`);
  if (!waypoint) return { outcome: 'missing', name, namespace, labelledOn };
  const outcome = !waypoint.allows(target.namespace)
    ? 'not-admitted'
    : waypoint.trafficType === traffic || waypoint.trafficType === 'all'
      ? 'used'
      : 'wrong-traffic';
  return { outcome, name, namespace, labelledOn, waypoint };
}

/** True when ingress gateways send this service's traffic to its waypoint (`istio.io/ingress-use-waypoint`). */
export function ingressUsesWaypoint(snapshot: Snapshot, service: MeshService): boolean {
  const own = service.labels[Label.IngressUseWaypoint];
  if (own !== undefined) return own === 'true';
  return (
    snapshot.get(GroupKind.Namespace, '', service.namespace)?.metadata.labels?.[Label.IngressUseWaypoint] ===
    'true'
  );
}

/**
 * The AuthorizationPolicy attributes ztunnel enforces (docs/semantics.md, ztunnel); every
 * other attribute is L7 and needs a waypoint. This is the one table of L4 and L7 attributes: the simulator's
 * ztunnel and the migration's split of policies both read it, and the analyzer's KFM420 (what a sidecar's
 * TCP filter checks) builds on it.
 */
export const l4SourceFields: ReadonlySet<string> = new Set([
  'principals',
  'notPrincipals',
  'namespaces',
  'notNamespaces',
  'serviceAccounts',
  'notServiceAccounts',
  'ipBlocks',
  'notIpBlocks',
]);
export const l4OperationFields: ReadonlySet<string> = new Set(['ports', 'notPorts']);
const l4WhenKeys: ReadonlySet<string> = new Set([
  'source.ip',
  'source.namespace',
  'source.principal',
  'destination.ip',
  'destination.port',
]);

/** The L4 attributes by where they stand in a rule: `from[].source`, `to[].operation`, `when[].key`. */
export const L4Attributes = {
  source: l4SourceFields,
  operation: l4OperationFields,
  when: l4WhenKeys,
} as const;

/** The L7 attributes a rule uses (`source.requestPrincipals`, `operation.paths`, a `when` key), sorted; empty: ztunnel enforces it whole. */
export function l7AttributesOf(rule: AuthzRule): string[] {
  const found = new Set<string>();
  for (const f of rule.from ?? [])
    for (const field of Object.keys(f.source ?? {}))
      if (!l4SourceFields.has(field)) found.add(`source.${field}`);
  for (const t of rule.to ?? [])
    for (const field of Object.keys(t.operation ?? {}))
      if (!l4OperationFields.has(field)) found.add(`operation.${field}`);
  for (const w of rule.when ?? []) if (!l4WhenKeys.has(w.key ?? '')) found.add(w.key ?? '');
  return [...found].sort();
}

/** Actions ztunnel does not enforce: their policies do nothing at ztunnel and need a waypoint (docs/semantics.md, ztunnel). */
export const WaypointOnlyActions: ReadonlySet<string> = new Set(['CUSTOM', 'AUDIT']);

/**
 * Why a policy needs a waypoint in ambient mode, sorted: the L7 attributes its rules use, and an action
 * ztunnel does not enforce (`action CUSTOM`, `action AUDIT`). Empty: ztunnel enforces it whole. The one
 * rule the simulator, the migration and the analyzer share.
 */
export function waypointReasonsOf(spec: { action?: string; rules?: AuthzRule[] }): string[] {
  const reasons = new Set((spec.rules ?? []).flatMap((r) => l7AttributesOf(r)));
  const action = spec.action ?? 'ALLOW';
  if (WaypointOnlyActions.has(action)) reasons.add(`action ${action}`);
  return [...reasons].sort();
}

/** Keeps an entry's L4 fields; `l7` says whether it had others. An entry left with no field matches nothing (docs/semantics.md, ztunnel). */
function l4Entry<T extends object>(
  entry: T | undefined,
  fields: ReadonlySet<string>,
): { entry: Partial<T>; l7: boolean; empty: boolean } {
  const kept: Partial<T> = {};
  let l7 = false;
  for (const k of Object.keys(entry ?? {}) as (keyof T & string)[]) {
    if (fields.has(k)) kept[k] = entry?.[k];
    else l7 = true;
  }
  return { entry: kept, l7, empty: Object.keys(kept).length === 0 };
}

/** A rule as ztunnel holds it, or none when the conversion drops it. */
interface L4Rule {
  rule: AuthzRule;
  /** Some entry was reduced to an empty match: the rule never matches. */
  neverMatches: boolean;
}

/** Istio's conversion for ztunnel (`handleRule`): ALLOW rules with L7 fields are dropped; DENY entries keep their L4 part. */
function toL4(rule: AuthzRule, action: 'ALLOW' | 'DENY'): L4Rule | undefined {
  const from = (rule.from ?? []).map((f) => l4Entry(f.source, l4SourceFields));
  const to = (rule.to ?? []).map((t) => l4Entry(t.operation, l4OperationFields));
  const when = (rule.when ?? []).map((c) => ({ condition: c, l7: !l4WhenKeys.has(c.key ?? '') }));
  const hasL7 = from.some((f) => f.l7) || to.some((t) => t.l7) || when.some((w) => w.l7);
  if (action === 'ALLOW' && hasL7) return undefined;
  const converted: AuthzRule = {};
  if (from.length) converted.from = from.map((f) => ({ source: f.entry }));
  if (to.length) converted.to = to.map((t) => ({ operation: t.entry }));
  const keptWhen = when.filter((w) => !w.l7).map((w) => w.condition);
  if (keptWhen.length) converted.when = keptWhen;
  const neverMatches =
    from.some((f) => f.empty && f.l7) || to.some((t) => t.empty && t.l7) || when.some((w) => w.l7);
  return { rule: converted, neverMatches };
}

/** The decision of a destination ztunnel, and why. */
export interface L4Decision {
  allowed: boolean;
  policy?: string;
  reason: string;
}

/**
 * ztunnel's inbound authorization (`assert_rbac`): the policies of the destination namespace, the root
 * namespace (global) and those selecting the workload, without `targetRefs` ones (those go to waypoints);
 * CUSTOM and AUDIT are not enforced. DENY that matches → deny; no ALLOW → allow; an ALLOW that matches →
 * allow; else deny. STRICT PeerAuthentication adds "deny without an identity".
 */
export function ztunnelAuthorize(
  candidates: readonly KubeObject[],
  workload: Workload,
  request: AuthzRequest,
  strict: boolean,
): L4Decision {
  if (strict && request.principal === undefined)
    return { allowed: false, reason: 'STRICT PeerAuthentication: no identity (plaintext)' };
  const policies = candidates.filter((p) => {
    if (targetRefsOf(p).length > 0) return false;
    const labels = policySpec(p).selector?.matchLabels;
    return labels === undefined || labelsMatch(workload.labels, labels);
  });
  const named = (p: KubeObject) => `${p.metadata.namespace}/${p.metadata.name}`;
  const rulesOf = (p: KubeObject, action: 'ALLOW' | 'DENY') =>
    (policySpec(p).rules ?? []).map((r) => toL4(r, action));
  const actionOf = (p: KubeObject) => policySpec(p).action ?? 'ALLOW';
  for (const p of policies.filter((p) => actionOf(p) === 'DENY')) {
    const match = rulesOf(p, 'DENY').some(
      (r) => r && !r.neverMatches && ruleMatches(r.rule, request, p.metadata.namespace ?? 'default'),
    );
    if (match)
      return { allowed: false, policy: named(p), reason: `DENY policy ${named(p)} matches (L4 part)` };
  }
  const allow = policies.filter((p) => actionOf(p) === 'ALLOW');
  if (allow.length === 0) return { allowed: true, reason: 'no ALLOW policy applies at ztunnel' };
  for (const p of allow) {
    const match = rulesOf(p, 'ALLOW').some(
      (r) => r && ruleMatches(r.rule, request, p.metadata.namespace ?? 'default'),
    );
    if (match) return { allowed: true, policy: named(p), reason: `ALLOW policy ${named(p)} matches` };
  }
  const empty = allow.filter((p) => rulesOf(p, 'ALLOW').length === 0);
  const dropped = allow.filter((p) => {
    const rules = rulesOf(p, 'ALLOW');
    return rules.length > 0 && rules.every((r) => r === undefined);
  });
  const why = [
    ...(empty.length > 0 ? [`${empty.map(named).join(', ')} has no rules (admits no one)`] : []),
    ...(dropped.length > 0
      ? [`${dropped.map(named).join(', ')} had only L7 rules, which ztunnel drops (deny all)`]
      : []),
  ]
    .map((w) => `; ${w}`)
    .join('');
  return { allowed: false, reason: `no ALLOW rule matches at ztunnel${why}` };
}
