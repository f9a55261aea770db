/**
 * KFM211: an AuthorizationPolicy or RequestAuthentication whose `targetRefs` name a Service (or a
 * ServiceEntry) that no waypoint serves (docs/semantics.md, Waypoints). Only waypoints and gateways apply
 * policies by target: ztunnel and sidecars ignore them. Without a waypoint taking the Service's traffic
 * (none named, the one named missing, not admitting the namespace, or taking another traffic type), the
 * policy is enforced nowhere, and an ALLOW policy meant to close the Service leaves it open. Shown with the
 * trace of a request to the Service that passes no waypoint. Targets that do not exist are KFM202's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { targetRefsOf } from '../../mesh/authorization.ts';
import { resolveWaypoint, type WaypointResolution } from '../../mesh/ambient.ts';
import type { MeshService } from '../../mesh/services.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import { traceWithoutWaypoint } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const policyTargetNotEnforced: Rule = {
  code: 'KFM211',
  name: 'policy-target-not-enforced',
  severity: Severity.Error,
  description:
    'a policy whose targetRefs name a Service no waypoint serves: ztunnel and sidecars ignore it, so it is enforced nowhere (an ALLOW policy leaves the Service open)',
  reads: [GroupKind.AuthorizationPolicy, GroupKind.RequestAuthentication],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const findings: Finding[] = [];
    for (const kind of [GroupKind.AuthorizationPolicy, GroupKind.RequestAuthentication] as const)
      for (const policy of context.snapshot.list(kind)) {
        const ns = policy.metadata.namespace ?? 'default';
        targetRefsOf(policy).forEach((ref, i) => {
          const service = targetService(mesh, ns, ref);
          if (!service) return;
          const resolved = resolveWaypoint(context.snapshot, mesh.waypoints, service, 'service');
          if (resolved.outcome === 'used') return;
          findings.push(finding(context, policy, i, service, resolved));
        });
      }
    return findings;
  },
};

/** The Service or ServiceEntry a target reference names in the policy's namespace. */
function targetService(
  mesh: Mesh,
  namespace: string,
  ref: { group?: string; kind?: string; name?: string },
): MeshService | undefined {
  const entry = ref.kind === 'ServiceEntry' && ref.group === 'networking.istio.io';
  if (!entry && !(ref.kind === 'Service' && (ref.group ?? '') === '')) return undefined;
  return mesh.services.find(
    (s) => s.namespace === namespace && s.name === ref.name && (s.type === 'ServiceEntry') === entry,
  );
}

function finding(
  context: AnalyzeContext,
  policy: KubeObject,
  index: number,
  service: MeshService,
  resolved: WaypointResolution,
): Finding {
  const mesh = context.mesh();
  const target = `${service.namespace}/${service.name}`;
  const sidecars =
    service.endpoints.length > 0 && service.endpoints.every((e) => e.workload?.proxy === 'sidecar');
  const why = sidecars
    ? `its pods run sidecars, which apply no policy by target`
    : reason(resolved, service.namespace);
  const allow =
    policy.kind === 'AuthorizationPolicy' &&
    (specOf(policy, 'security.istio.io/AuthorizationPolicy').action ?? 'ALLOW') === 'ALLOW';
  const effect = allow
    ? `it admits nothing and restricts nothing: ${target} stays open to every caller its other policies admit`
    : 'it is enforced nowhere';
  return findingOf(
    policyTargetNotEnforced,
    context,
    policy,
    ['spec', 'targetRefs', index],
    `targets Service ${target}, which no waypoint serves (${why}): ${effect}`,
    {
      fix: sidecars
        ? `move ${service.namespace} to ambient mode with a waypoint, or give the policy a selector for the sidecars`
        : `give ${target} a waypoint (istio.io/use-waypoint on it or its namespace, naming a waypoint that takes service traffic and admits ${service.namespace})`,
      evidence: traceWithoutWaypoint(mesh, service),
    },
  );
}

function reason(resolved: WaypointResolution, namespace: string): string {
  switch (resolved.outcome) {
    case 'none-named':
      return `neither it nor namespace ${namespace} names one with istio.io/use-waypoint`;
    case 'opted-out':
      return 'it opts out with istio.io/use-waypoint: none';
    case 'missing':
      return `the waypoint named, ${resolved.namespace}/${resolved.name}, does not exist`;
    case 'not-admitted':
      return `waypoint ${resolved.namespace}/${resolved.name} does not admit namespace ${namespace} (its HBONE listener's allowedRoutes)`;
    case 'used':
      return `waypoint ${resolved.namespace}/${resolved.name} takes it`;
    case 'wrong-traffic':
      return `waypoint ${resolved.namespace}/${resolved.name} takes ${resolved.waypoint.trafficType} traffic, not a Service's (istio.io/waypoint-for)`;
  }
}
