/**
 * KFM204: a Service whose L7 policy lives on its waypoint, called by workloads with sidecars. Sidecars
 * send straight to the pods and skip the waypoint, so for them the policy does not apply; only the L4
 * policy at ztunnel decides. Shown with the trace of one such client.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { targetRefsOf } from '../../mesh/authorization.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { hopPath } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const sidecarClientSkipsWaypoint: Rule = {
  code: 'KFM204',
  name: 'sidecar-client-skips-waypoint',
  severity: Severity.Warning,
  description:
    "sidecar clients of a Service whose L7 policy is on a waypoint skip the waypoint: the policy doesn't apply to them",
  reads: [GroupKind.AuthorizationPolicy],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const clients = [...mesh.workloadByName]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .filter(([, w]) => w.proxy === 'sidecar')
      .map(([name]) => name);
    if (clients.length === 0 || mesh.waypoints.size === 0) return [];
    const findings: Finding[] = [];
    for (const policy of context.snapshot.list(GroupKind.AuthorizationPolicy)) {
      const ns = policy.metadata.namespace ?? 'default';
      for (const ref of targetRefsOf(policy)) {
        const services =
          ref.kind === 'Service'
            ? mesh.services.filter((s) => s.namespace === ns && s.name === ref.name)
            : ref.kind === 'Gateway' && mesh.waypoints.has(`${ns}/${ref.name}`)
              ? mesh.services.filter(
                  (s) => s.namespace === ns && s.type !== 'ExternalName' && s.type !== 'ServiceEntry',
                )
              : [];
        const service = services.find((s) => s.ports.length > 0);
        if (!service) continue;
        const port = service.ports[0]?.port ?? 80;
        const url = `http://${service.hostname}:${port}/`;
        // A sidecar client whose connection no NetworkPolicy drops: one that does reach the workloads.
        let client: string | undefined;
        let trace: ReturnType<typeof traceRequest> | undefined;
        for (const name of clients) {
          trace = traceRequest(mesh, { from: name, url });
          if (trace.hops.some((h) => h.kind === 'waypoint')) break;
          if (!trace.hops.some((h) => h.policy?.startsWith('NetworkPolicy ') && h.decision === 'deny')) {
            client = name;
            break;
          }
        }
        if (!client || !trace || trace.hops.some((h) => h.kind === 'waypoint')) continue;
        findings.push(
          findingOf(
            sidecarClientSkipsWaypoint,
            context,
            policy,
            ['spec', 'targetRefs'],
            `enforced on a waypoint, but clients with sidecars (such as ${client}) reach ${service.namespace}/${service.name} without passing it: the policy does not apply to them`,
            {
              fix: "move those clients' namespaces to ambient mode, or keep an equivalent selector-based policy for sidecar callers",
              evidence: [`GET ${url} from ${client}: ${hopPath(trace)} → ${trace.response.code}`],
            },
          ),
        );
        break;
      }
    }
    return findings;
  },
};
