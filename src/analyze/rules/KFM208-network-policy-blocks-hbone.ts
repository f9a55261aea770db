/**
 * KFM208: an ingress NetworkPolicy of an ambient pod that admits a mesh peer on the pod's own port but not
 * on 15008, where ztunnel delivers mesh traffic to ambient pods over HBONE; or that does not admit the
 * waypoint that sends the pod its Service's traffic (docs/semantics.md, NetworkPolicy). The CNI drops
 * those connections: the callers the policy meant to admit time out (503 UF behind a proxy). A policy
 * written for sidecars, kept through a move to ambient, does this. Shown with a trace where the peer is a
 * client the simulator can start from. An error where the policy names the peers it admits; a warning
 * where it admits every peer on the port, since its callers may all be outside the mesh (the API server
 * calling a webhook keeps the pod's own port).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { waypointForService, type Waypoint } from '../../mesh/ambient.ts';
import { servicePortsOf, type MeshService } from '../../mesh/services.ts';
import { HboneTargetPort } from '../../mesh/trace/network.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import { traceLine } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

/** Proxies that reach an ambient pod over HBONE. */
const meshPeers = new Set<string>([
  ProxyKind.Sidecar,
  ProxyKind.Ambient,
  ProxyKind.Gateway,
  ProxyKind.Waypoint,
]);

export const networkPolicyBlocksHbone: Rule = {
  code: 'KFM208',
  name: 'network-policy-blocks-hbone',
  severity: Severity.Error,
  description:
    "an ambient pod's ingress NetworkPolicy admits a mesh peer on the pod's port but not on HBONE's 15008, or not the waypoint in front of it: those connections are dropped",
  reads: [GroupKind.NetworkPolicy],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const policies = mesh.networkPolicies;
    const findings: Finding[] = [];
    const reported = new Set<string>();
    // Two peers per way the policies see a source (peers with the same view are admitted and refused alike;
    // two, so that one differs from the pod being checked).
    const views = new Map<string, Workload[]>();
    for (const c of mesh.workloads) {
      if (!meshPeers.has(c.proxy)) continue;
      const view = policies.sourceView(c);
      const list = views.get(view) ?? [];
      if (list.length < 2) views.set(view, [...list, c]);
    }
    const peers = [...views.values()].flat();
    for (const pod of mesh.workloads) {
      if (pod.proxy !== ProxyKind.Ambient) continue;
      if (policies.admittedPeers(pod, HboneTargetPort).open) continue;
      for (const { service, port, targetPort } of servicePortsOf(mesh, pod)) {
        const waypoint =
          mesh.waypoints.size > 0 ? waypointForService(mesh.snapshot, mesh.waypoints, service) : undefined;
        const blocked = blockedPeers(mesh, pod, service, targetPort, waypoint, peers);
        for (const { peer, by, why, named } of blocked) {
          for (const name of by) {
            const key = `${name}|${pod.namespace}/${pod.name}`;
            if (reported.has(key)) continue;
            reported.add(key);
            const [ns = '', policyName = ''] = name.split('/');
            const policy = context.snapshot.get(GroupKind.NetworkPolicy, ns, policyName);
            if (!policy) continue;
            const evidence = traced(mesh, peer, `http://${service.hostname}:${port.port}/`);
            const finding = findingOf(
              networkPolicyBlocksHbone,
              context,
              policy,
              ['spec', 'ingress'],
              `refuses HBONE (port ${HboneTargetPort}) to ambient pods of ${pod.namespace}/${pod.name}: ${why}, so those connections are dropped`,
              {
                fix: `admit port ${HboneTargetPort} from the same peers${waypoint ? `, and the waypoint's pods` : ''} (a rule with ports: [{port: ${HboneTargetPort}}])`,
                ...(evidence ? { evidence: [evidence] } : {}),
              },
            );
            // A policy that names the peer meant to admit it; one that admits everyone may serve only callers
            // outside the mesh (the API server calling a webhook), which keep their port.
            findings.push(named ? finding : { ...finding, severity: Severity.Warning });
          }
        }
      }
    }
    return findings;
  },
};

/** A peer refused on HBONE: by which policies, why, and whether the policy names it (else: everyone). */
interface Blocked {
  peer: Workload;
  by: string[];
  why: string;
  named: boolean;
}

/**
 * The peer an ambient pod's policies refuse on 15008 for one Service port: its waypoint when it has one
 * (which sends all of the Service's traffic), else the first mesh peer admitted on the pod's own port.
 */
function blockedPeers(
  mesh: Mesh,
  pod: Workload,
  service: MeshService,
  targetPort: number,
  waypoint: Waypoint | undefined,
  peers: readonly Workload[],
): Blocked[] {
  const policies = mesh.networkPolicies;
  const hbone = (peer: Workload) => policies.ingress({ workload: peer, ip: peer.ip }, pod, HboneTargetPort);
  if (waypoint) {
    const verdict = hbone(waypoint.workload);
    return verdict.isolated && !verdict.allowed
      ? [
          {
            peer: waypoint.workload,
            by: verdict.by,
            why: `its waypoint ${waypoint.namespace}/${waypoint.name} sends ${service.name}'s traffic`,
            named: true,
          },
        ]
      : [];
  }
  // Reported on the policy that admits the peer on the original port: the rule meant for it. A rule that
  // admits every peer on the port names no mesh peer: whether one calls is not known (warning).
  const everyone = policies.admittedPeers(pod, targetPort).open;
  for (const c of peers) {
    if (c === pod) continue;
    const original = policies.ingress({ workload: c, ip: c.ip }, pod, targetPort);
    if (!original.isolated || !original.allowed) continue;
    const tunnelled = hbone(c);
    if (!tunnelled.isolated || tunnelled.allowed) continue;
    return [
      {
        peer: c,
        by: [original.by],
        why: everyone
          ? `it admits every peer on port ${targetPort}, but mesh traffic (from ${c.namespace}/${c.name}, say) arrives on ${HboneTargetPort}`
          : `it admits ${c.namespace}/${c.name} on port ${targetPort}, but mesh traffic arrives on ${HboneTargetPort}`,
        named: !everyone,
      },
    ];
  }
  return [];
}

/** A trace from the peer when the simulator can start from it (a pod with a sidecar or in ambient). */
function traced(mesh: Mesh, peer: Workload, url: string): string | undefined {
  if (peer.proxy !== ProxyKind.Sidecar && peer.proxy !== ProxyKind.Ambient) return undefined;
  const from = `${peer.namespace}/${peer.name}`;
  return traceLine(`GET ${url} from ${from}`, traceRequest(mesh, { from, url }));
}
