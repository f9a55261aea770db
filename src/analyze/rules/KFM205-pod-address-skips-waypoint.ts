/**
 * KFM205: the policies of a Service sit on a waypoint that serves only Service traffic
 * (`istio.io/waypoint-for: service`, the default), and ztunnel lets a client reach the Service's pods by
 * their own address, which the waypoint never sees (docs/semantics.md, Waypoints and ztunnel). Found by
 * tracing: a client the waypoint refuses for the Service is answered by the pod when it addresses the pod.
 * The finding names the ztunnel ALLOW policy that admitted the connection (or the Service, when no ALLOW
 * applies at ztunnel) and carries both traces.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { AmbientIndex } from '../../mesh/trace/ambient.ts';
import { requestPrincipalOf } from '../../mesh/jwt.ts';
import { policySpec } from '../../mesh/authorization.ts';
import { principalOf } from '../../model/identity.ts';
import { requestVariants } from '../../mesh/request-variants.ts';
import type { MeshService } from '../../mesh/services.ts';
import type { Workload } from '../../mesh/workloads.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import type { TraceResult } from '../../model/trace-result.ts';
import { hopPath } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const podAddressSkipsWaypoint: Rule = {
  code: 'KFM205',
  name: 'pod-address-skips-waypoint',
  severity: Severity.Error,
  description:
    "ztunnel admits clients that address a Service's pods directly, skipping the waypoint that holds the Service's policies (it serves only Service traffic)",
  reads: [GroupKind.AuthorizationPolicy],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    if (mesh.waypoints.size === 0) return [];
    const ambient = AmbientIndex.of(mesh);
    // One client per identity and proxy: ztunnel and the waypoint judge by identity (and address, which
    // only ipBlocks read; those are rare enough to leave to verify --equivalence, which traces them all).
    const seen = new Set<string>();
    const clients = [...mesh.workloadByName]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .filter(([, w]) => {
        const key = `${w.namespace}/${w.serviceAccount}/${w.proxy}`;
        if ((w.proxy !== 'sidecar' && w.proxy !== 'ambient') || seen.has(key)) return false;
        seen.add(key);
        return true;
      })
      .map(([name]) => name);
    const variants = requestVariants([mesh.snapshot]);
    const findings: Finding[] = [];
    const reported = new Set<string>();
    for (const service of mesh.services) {
      const waypoint = ambient.service(service).waypoint;
      if (!waypoint || waypoint.trafficType !== 'service') continue;
      const policies = ambient.policies(service, waypoint);
      if (policies.length === 0 || admitsEveryone(policies)) continue;
      const bypass = firstBypass(mesh, service, clients, variants);
      if (!bypass) continue;
      const object = bypass.policy ?? service.object;
      const key = `${object.metadata.namespace}/${object.metadata.name}/${service.namespace}/${service.name}`;
      if (reported.has(key)) continue;
      reported.add(key);
      const admitted = bypass.policy
        ? `ALLOW policy ${bypass.policy.metadata.namespace}/${bypass.policy.metadata.name} admits`
        : 'no ALLOW policy applies at ztunnel, so it admits';
      findings.push(
        findingOf(
          podAddressSkipsWaypoint,
          context,
          object,
          bypass.policy ? ['spec', 'rules'] : undefined,
          `${admitted} ${bypass.client}'s connections to the pods of ${service.namespace}/${service.name} addressed directly (${bypass.pod}): waypoint ${waypoint.namespace}/${waypoint.name} serves only Service traffic, so the Service's policies, which refuse ${bypass.client}, do not apply`,
          {
            fix: `let ztunnel admit only the waypoint's identity for these pods (its ALLOW rules from principals of ${waypoint.namespace}/${waypoint.name}), or make the waypoint serve workload traffic too (label it istio.io/waypoint-for: all) and label the pods istio.io/use-waypoint`,
            evidence: [describe(bypass.viaService), describe(bypass.direct)],
          },
        ),
      );
    }
    return findings;
  },
};

interface Bypass {
  client: string;
  pod: string;
  policy: KubeObject | undefined;
  viaService: TraceResult;
  direct: TraceResult;
}

/**
 * The first client (by name) and request (of those that tell the policies apart) that the waypoint refuses
 * for the Service and the pod answers when addressed directly.
 */
function firstBypass(
  mesh: Mesh,
  service: MeshService,
  clients: readonly string[],
  variants: readonly { method: string; headers: Record<string, string> }[],
): Bypass | undefined {
  const port = service.ports[0];
  const endpoint = service.endpoints.find((e) => e.workload?.proxy === 'ambient');
  const pod: Workload | undefined = endpoint?.workload;
  if (!port || !endpoint || !pod) return undefined;
  const podName = `${pod.namespace}/${pod.name}`;
  const serviceUrl = `http://${service.hostname}:${port.port}/`;
  const podUrl = `http://${endpoint.ip}:${endpoint.portFor(port)}/`;
  const ambient = AmbientIndex.of(mesh);
  const waypoint = ambient.service(service).waypoint;
  const waypointPolicies = waypoint ? ambient.policies(service, waypoint) : [];
  for (const client of clients) {
    const sender = mesh.workloadByName.get(client);
    if (client === podName || !sender) continue;
    // Cheap first: a client whose direct connection ztunnel refuses cannot skip the waypoint.
    const mtls = sender.proxy === 'ambient';
    if (!ambient.inbound(pod, sender, endpoint.portFor(port), mtls).decision.allowed) continue;
    for (const variant of variants) {
      // Cheap again: the waypoint's own verdict, before the traces that prove it.
      if (waypointAdmits(mesh, waypointPolicies, sender, service, port.port, variant)) continue;
      const viaService = traceRequest(mesh, { from: client, url: serviceUrl, ...variant });
      if (!viaService.hops.some((h) => h.kind === 'waypoint' && h.decision === 'deny')) continue;
      const direct = traceRequest(mesh, { from: client, url: podUrl, ...variant });
      if (direct.answeredBy !== podName || direct.hops.some((h) => h.kind === 'waypoint')) continue;
      const admitting = direct.hops.find((h) => h.kind === 'ztunnel' && h.direction === 'inbound')?.policy;
      const [ns, name] = (admitting ?? '').split('/');
      const policy = ns && name ? mesh.snapshot.get(GroupKind.AuthorizationPolicy, ns, name) : undefined;
      return {
        client,
        pod: `${podName} at ${endpoint.ip}:${endpoint.portFor(port)}`,
        policy,
        viaService,
        direct,
      };
    }
  }
  return undefined;
}

/** Whether policies admit every request: no DENY or CUSTOM among them, and an ALLOW rule that matches all. */
function admitsEveryone(policies: readonly KubeObject[]): boolean {
  const specs = policies.map((p) => policySpec(p));
  return (
    specs.every((s) => (s.action ?? 'ALLOW') === 'ALLOW' || s.action === 'AUDIT') &&
    specs.some(
      (s) => (s.action ?? 'ALLOW') === 'ALLOW' && (s.rules ?? []).some((r) => Object.keys(r).length === 0),
    )
  );
}

/** Whether the Service's waypoint policies admit this client's request (as the waypoint would judge it). */
function waypointAdmits(
  mesh: Mesh,
  policies: readonly KubeObject[],
  client: Workload,
  service: MeshService,
  port: number,
  variant: { method: string; headers: Record<string, string> },
): boolean {
  if (policies.length === 0) return true;
  return mesh.authorization.evaluate(policies, {
    principal: principalOf(client, mesh.config.trustDomain),
    sourceIp: client.ip,
    requestPrincipal: requestPrincipalOf(variant.headers),
    host: port === 80 ? service.hostname : `${service.hostname}:${port}`,
    method: variant.method,
    path: '/',
    port,
    headers: variant.headers,
    destinationIp: service.vip ?? '',
  }).allowed;
}

function describe(trace: TraceResult): string {
  const hops = hopPath(trace);
  const headers = Object.entries(trace.request.headers).map(
    ([k, v]) => ` -H '${k}: ${k === 'authorization' ? 'Bearer …' : v}'`,
  );
  return `${trace.request.method} ${trace.request.url}${headers.join('')} from ${trace.request.from}: ${hops} → ${trace.response.code || trace.summary}`;
}
