/**
 * KFM212: `istio.io/use-waypoint` on a Service or namespace names a waypoint that exists but will not take
 * the traffic (docs/semantics.md, Waypoints): its HBONE listener's `allowedRoutes` does not admit the
 * namespace (another namespace's waypoint, `istio.io/use-waypoint-namespace`, admits only its own by
 * default), or it takes another traffic type (`istio.io/waypoint-for`: a Service labelled for a
 * `workload` waypoint, or any label for a waypoint that takes `none`). The traffic then goes without the
 * waypoint, its L7 policies and its routing, and nothing reports it. Shown with the trace of a request that
 * passes no waypoint. A waypoint that does not exist is KFM202's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { resolveWaypoint } from '../../mesh/ambient.ts';
import type { MeshService } from '../../mesh/services.ts';
import { traceWithoutWaypoint } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const waypointRefusesTraffic: Rule = {
  code: 'KFM212',
  name: 'waypoint-refuses-traffic',
  severity: Severity.Error,
  description:
    'istio.io/use-waypoint names a waypoint that does not admit the namespace or takes another traffic type: the traffic skips it, its L7 policies and routing',
  reads: [GroupKind.Namespace, GroupKind.Service],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const findings: Finding[] = [];
    const report = (object: KubeObject, service: MeshService | undefined, problem: string) =>
      findings.push(
        findingOf(
          waypointRefusesTraffic,
          context,
          object,
          ['metadata', 'labels', Label.UseWaypoint],
          `${problem}: its traffic goes without the waypoint, its L7 policies and its routing`,
          {
            fix: "admit the namespace on the waypoint's HBONE listener (allowedRoutes.namespaces), label the waypoint for the traffic (istio.io/waypoint-for: service or all), or name another waypoint",
            evidence: service ? traceWithoutWaypoint(mesh, service) : [],
          },
        ),
      );
    for (const service of mesh.services.filter((s) => s.type !== 'ServiceEntry')) {
      if (service.labels[Label.UseWaypoint] === undefined) continue;
      const problem = refusal(
        resolveWaypoint(context.snapshot, mesh.waypoints, service, 'service'),
        service.namespace,
      );
      const object = context.snapshot.get(GroupKind.Service, service.namespace, service.name);
      if (problem && object) report(object, service, problem);
    }
    for (const ns of context.snapshot.list(GroupKind.Namespace)) {
      if (ns.metadata.labels?.[Label.UseWaypoint] === undefined) continue;
      const name = ns.metadata.name ?? '';
      // The namespace's own label, as its Services without one of their own read it.
      const resolved = resolveWaypoint(
        context.snapshot,
        mesh.waypoints,
        { namespace: name, labels: {} },
        'service',
      );
      const wrongType = resolved.outcome === 'wrong-traffic' && resolved.waypoint.trafficType === 'none';
      const problem = resolved.outcome === 'not-admitted' || wrongType ? refusal(resolved, name) : undefined;
      const service = mesh.services.find(
        (s) => s.namespace === name && s.labels[Label.UseWaypoint] === undefined,
      );
      if (problem) report(ns, service, problem);
    }
    return findings;
  },
};

function refusal(resolved: ReturnType<typeof resolveWaypoint>, namespace: string): string | undefined {
  if (resolved.outcome === 'not-admitted')
    return `istio.io/use-waypoint names waypoint ${resolved.namespace}/${resolved.name}, whose HBONE listener does not admit namespace ${namespace} (allowedRoutes)`;
  if (resolved.outcome === 'wrong-traffic')
    return `istio.io/use-waypoint names waypoint ${resolved.namespace}/${resolved.name}, which takes ${resolved.waypoint.trafficType} traffic, not a Service's (istio.io/waypoint-for)`;
  return undefined;
}
