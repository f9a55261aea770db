/**
 * KFM213: a Service whose waypoint holds policies for it, routed to from an ingress gateway that skips the
 * waypoint (docs/semantics.md, Waypoints). An ingress gateway sends to the Service's pods directly unless
 * the Service or its namespace is labelled `istio.io/ingress-use-waypoint: "true"`, so the policies on the
 * waypoint (those targeting the Service or the waypoint) do not apply to requests from outside; only
 * ztunnel's L4 policy does. Shown with the route and, where the simulator finds it, the trace of a request
 * through the gateway.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { targetRefsOf } from '../../mesh/authorization.ts';
import { ingressUsesWaypoint, resolveWaypoint } from '../../mesh/ambient.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import type { MeshService } from '../../mesh/services.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { bearerToken } from '../../mesh/request-variants.ts';
import { specOf } from '../../model/specs.ts';
import {
  Mesh as MeshGateway,
  resolveShortName,
  type HttpRule,
  type ResolvedVirtualService,
} from '../../mesh/virtual-services.ts';
import { hopPath } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const ingressSkipsWaypoint: Rule = {
  code: 'KFM213',
  name: 'ingress-skips-waypoint',
  severity: Severity.Warning,
  description:
    'an ingress gateway routes to a Service whose waypoint holds its policies, without istio.io/ingress-use-waypoint: requests from outside skip those policies',
  reads: [GroupKind.AuthorizationPolicy],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    if (mesh.waypoints.size === 0) return [];
    const policies = context.snapshot.list(GroupKind.AuthorizationPolicy);
    // The gateway names some gateway pod serves (a name no Gateway has serves nothing: KFM405).
    const served = new Set([...mesh.gateways.values()].flatMap((p) => p.servers.map((s) => s.gateway)));
    const findings: Finding[] = [];
    for (const service of mesh.services.filter((s) => s.type !== 'ServiceEntry')) {
      const resolved = resolveWaypoint(context.snapshot, mesh.waypoints, service, 'service');
      if (resolved.outcome !== 'used' || ingressUsesWaypoint(context.snapshot, service)) continue;
      const { waypoint } = resolved;
      const held = policies.filter((p) =>
        targetRefsOf(p).some(
          (r) =>
            (r.kind === 'Service' && p.metadata.namespace === service.namespace && r.name === service.name) ||
            (r.kind === 'Gateway' && p.metadata.namespace === waypoint.namespace && r.name === waypoint.name),
        ),
      );
      const route = held.length > 0 ? ingressRouteTo(mesh, served, service) : undefined;
      const object = context.snapshot.get(GroupKind.Service, service.namespace, service.name);
      if (!route || !object) continue;
      const names = held
        .map((p) => `${p.metadata.namespace ?? 'default'}/${p.metadata.name ?? ''}`)
        .join(', ');
      findings.push(
        findingOf(
          ingressSkipsWaypoint,
          context,
          object,
          ['metadata', 'labels'],
          `routed to from ingress by ${route.vs.source.kind} ${route.vs.namespace}/${route.vs.name} (gateway ${route.gateway}), which sends to its pods without waypoint ${waypoint.namespace}/${waypoint.name}: the policies there (${names}) do not apply to requests from outside`,
          {
            fix: `label the Service (or namespace ${service.namespace}) ${Label.IngressUseWaypoint}: "true", so ingress traffic goes through the waypoint`,
            evidence: ingressTrace(mesh, route),
          },
        ),
      );
    }
    return findings;
  },
};

/** An ingress route to the Service: one bound to a gateway that `served` names, with its rule sending there. */
interface IngressRoute {
  vs: ResolvedVirtualService;
  gateway: string;
  rule: HttpRule;
}

/** A route bound to an ingress gateway (not `mesh`, not a waypoint) with a destination at the Service. */
function ingressRouteTo(
  mesh: Mesh,
  served: ReadonlySet<string>,
  service: MeshService,
): IngressRoute | undefined {
  for (const vs of mesh.virtualServices) {
    const gateway = vs.gateways.find((g) => g !== MeshGateway && served.has(g));
    if (!gateway) continue;
    const rule = vs.http.find((r) =>
      (r.route ?? []).some(
        (d) => resolveShortName(d.destination.host, vs.namespace, mesh.clusterDomain) === service.hostname,
      ),
    );
    if (rule) return { vs, gateway, rule };
  }
  return undefined;
}

/** A request from outside to the route's first host, when the simulator takes it to the Service without a waypoint. */
function ingressTrace(mesh: Mesh, { vs, rule }: IngressRoute): string[] {
  // A wildcard host stands for any name under it: one is made up.
  const written = vs.hosts[0];
  if (!written) return [];
  const host = written === '*' ? 'ingress.example.com' : written.replace(/^\*\./, 'any.');
  const uri = rule.match?.[0]?.uri;
  const path = uri?.prefix ?? uri?.pathSeparatedPrefix ?? uri?.exact ?? '/';
  const url = `http://${host}${path.startsWith('/') ? path : `/${path}`}`;
  // Kubeflow's gateways refuse requests without a token: one of each issuer the mesh trusts is tried too.
  const issuers = mesh.snapshot
    .list(GroupKind.RequestAuthentication)
    .flatMap((r) =>
      (specOf(r, 'security.istio.io/RequestAuthentication').jwtRules ?? []).map((j) => j.issuer ?? ''),
    )
    .filter((i, n, all) => i && all.indexOf(i) === n);
  for (const issuer of [undefined, ...issuers]) {
    const headers: Record<string, string> = issuer ? { authorization: bearerToken(issuer) } : {};
    const trace = traceRequest(mesh, { from: 'external', url, headers });
    const reached = trace.response.code >= 200 && trace.response.code < 400;
    if (!reached) continue;
    if (trace.hops.some((h) => h.kind === 'waypoint')) return [];
    const hops = hopPath(trace);
    return [
      `GET ${url} from outside${issuer ? ` with a token of ${issuer}` : ''}: ${hops} → ${trace.response.code}`,
    ];
  }
  return [];
}
