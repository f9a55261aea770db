/**
 * An ingress gateway (docs/semantics.md, "Gateways"): an external request enters through the gateway that
 * serves its host and port, whose servers and routes decide where it goes next.
 */
import { gatewayRouteTable, pickDomain } from '../gateways.ts';
import type { MatchContext } from '../http-match.ts';
import { hostWithoutPort } from '../sidecar-outbound.ts';
import { authenticate, authorize } from './inbound.ts';
import { TraceInputError } from './request.ts';
import { firstRoute } from './route-match.ts';
import { networkPolicyStep } from './network.ts';
import { type Connection, type TraceOutcome, Tracer, connection } from './tracer.ts';
import type { GatewayProxy, GatewayServer, Mesh } from '../compiled.ts';
import { hostMatches } from '../security.ts';

/** A client outside the cluster: it enters through the ingress gateway whose server serves the URL's host and port. */
export function fromExternal(
  t: Tracer,
  host: string,
  port: number,
  https: boolean,
  via?: string,
  portForward = false,
): TraceOutcome {
  const names = (p: GatewayProxy) => [
    `${p.workload.namespace}/${p.workload.name}`,
    ...(p.gatewayApiName ? [`${p.workload.namespace}/${p.gatewayApiName}`] : []),
  ];
  const all = [...t.mesh.gateways.values()];
  const proxies = via === undefined ? all : all.filter((p) => names(p).includes(via));
  if (via !== undefined && proxies.length === 0)
    throw new TraceInputError(
      `--via ${via}: no such ingress gateway; the gateways are ${all.flatMap(names).join(', ') || 'none'}`,
    );
  // Of the gateways that serve the host and port, the first that also has routes for it wins (several
  // gateways often serve `*` on port 80, and only one of them routes the host).
  const candidates = serving(proxies, host, port);
  const routed = candidates.find(({ proxy, server }) => {
    const table = gatewayRouteTable(t.mesh, proxy, server.listenPort);
    return table !== undefined && pickDomain(table.virtualHosts, host) !== undefined;
  });
  // A gateway named with --via that lists the port but not the host is still reached at its address: its
  // listener's route configuration has no virtual host for the host (docs/semantics.md, Gateways).
  const chosen = routed ?? candidates[0] ?? (via !== undefined ? onPort(proxies, port) : undefined);
  if (chosen) {
    const { proxy, server } = chosen;
    const conn = connection(
      undefined,
      -1,
      false,
      proxy.workload.ip,
      server.listenPort,
      proxy.workload,
      https,
    );
    if (portForward) {
      const first = t.hops.length;
      const outcome = gateway(t, proxy, conn);
      t.hops[first]?.notes.unshift(
        'entered by kubectl port-forward, inside the pod: NetworkPolicies do not see the connection',
      );
      return outcome;
    }
    // The gateway's pods are pods like any: their namespace's NetworkPolicies see the outside client too.
    return networkPolicyStep(t, conn) ?? gateway(t, proxy, conn);
  }
  throw new TraceInputError(
    `--from external: ${via === undefined ? 'no ingress gateway serves' : `${via} does not serve`} ${host}:${port} (no Gateway server lists that host and port)`,
  );
}

/** The gateways (and their server) whose Gateway servers take this host and port. */
function serving(
  proxies: readonly GatewayProxy[],
  host: string,
  port: number,
): { proxy: GatewayProxy; server: GatewayProxy['servers'][number] }[] {
  return proxies.flatMap((proxy) => {
    const server = proxy.servers.find(
      (s) =>
        s.port === port &&
        s.hosts.some((h) => hostCovers(h.includes('/') ? (h.split('/')[1] ?? '') : h, host)),
    );
    return server ? [{ proxy, server }] : [];
  });
}

/** The first of the gateways with a server on this port, whatever hosts it lists. */
function onPort(
  proxies: readonly GatewayProxy[],
  port: number,
): { proxy: GatewayProxy; server: GatewayServer } | undefined {
  for (const proxy of proxies) {
    const server = proxy.servers.find((s) => s.port === port);
    if (server) return { proxy, server };
  }
  return undefined;
}

/**
 * How outside clients reach the platform (docs/semantics.md, NetworkPolicy): through the network, unless
 * the NetworkPolicies of every ingress gateway's pods refuse a client from outside on every port the
 * gateway listens on; then the only way in is `kubectl port-forward` (as Kubeflow's own instructions
 * reach it), which the policies do not see. `why` names the policies when so.
 */
export function outsideEntry(mesh: Mesh): { portForward: boolean; why?: string } {
  const proxies = [...mesh.gateways.values()];
  if (proxies.length === 0 || mesh.networkPolicies.empty) return { portForward: false };
  const refusing = new Set<string>();
  for (const proxy of proxies)
    for (const server of proxy.servers) {
      const verdict = mesh.networkPolicies.ingress(
        { workload: undefined, ip: undefined },
        proxy.workload,
        server.listenPort,
      );
      if (!verdict.isolated || verdict.allowed) return { portForward: false };
      for (const p of verdict.by) refusing.add(p);
    }
  return {
    portForward: true,
    why: `NetworkPolicy ${[...refusing].sort().join(', ')} refuses clients from outside at every ingress gateway, so they come in by kubectl port-forward`,
  };
}

/**
 * The front doors of a host and port: the ingress gateways that serve it and have routes for it, as `--via`
 * names them: of those, the ones that name the host most specifically. DNS or a load balancer sends a
 * host's clients to one address, so every front door of a host must answer its requests alike
 * (docs/semantics.md, One front door).
 */
export function frontDoors(mesh: Mesh, host: string, port: number): string[] {
  // A host resolves to the gateway that names it most specifically (its own name over `*.suffix` over `*`).
  const specificity = (domain: string) => (domain === host ? Infinity : domain === '*' ? 0 : domain.length);
  const routed = serving([...mesh.gateways.values()], host, port).flatMap(({ proxy, server }) => {
    const table = gatewayRouteTable(mesh, proxy, server.listenPort);
    const vhost = table ? pickDomain(table.virtualHosts, host) : undefined;
    return vhost ? [{ proxy, rank: specificity(vhost.domain) }] : [];
  });
  const best = Math.max(...routed.map((r) => r.rank));
  return routed
    .filter((r) => r.rank === best)
    .map(({ proxy }) => `${proxy.workload.namespace}/${proxy.workload.name}`);
}

/** The ingress gateways an outside client can enter through for this host and port, as `--via` names them. */
export function ingressGatewaysServing(mesh: Mesh, host: string, port: number): string[] {
  return serving([...mesh.gateways.values()], host, port).map(
    ({ proxy }) => `${proxy.workload.namespace}/${proxy.workload.name}`,
  );
}

function hostCovers(pattern: string, host: string): boolean {
  return pattern === '*' || pattern === host || (pattern.startsWith('*.') && host.endsWith(pattern.slice(1)));
}

/** Step: a gateway — listener at the arrival port, TLS, authorization, virtual host, route. */
export function gateway(t: Tracer, proxy: GatewayProxy, conn: Connection): TraceOutcome {
  const w = proxy.workload;
  t.originalDestination = undefined;
  const table = gatewayRouteTable(t.mesh, proxy, conn.port);
  const hop = t.hop('gateway', w, 'outbound', `0.0.0.0_${conn.port}`, conn.mtls);
  if (!table) {
    // No server of any Gateway makes a listener on this port: the connection is refused.
    if (!proxy.servers.some((s) => s.listenPort === conn.port)) t.at(hop).listener = undefined;
    t.at(hop).notes.push(`no HTTP server listens on port ${conn.port}`);
    return t.localReply(
      conn.senderHop,
      503,
      'UF',
      `${w.namespace}/${w.name} has no listener on port ${conn.port}`,
    );
  }
  t.at(hop).routeConfig = table.name;
  const wantsIstioMtls = table.servers.some((s) => s.protocol === 'HTTPS' && s.tlsMode === 'ISTIO_MUTUAL');
  const plain = table.servers.some((s) => s.protocol !== 'HTTPS');
  const terminatesTls = table.servers.some((s) => s.protocol === 'HTTPS' && s.tlsMode !== 'ISTIO_MUTUAL');
  const accepted = conn.mtls ? wantsIstioMtls : conn.externalTls ? terminatesTls : plain;
  if (!accepted) {
    t.at(hop).notes.push(
      `the servers on port ${conn.port} expect ${wantsIstioMtls ? 'Istio mTLS' : terminatesTls ? 'TLS' : 'plaintext'}`,
    );
    return t.localReply(conn.senderHop, 503, 'UF', `TLS mismatch at ${w.namespace}/${w.name}:${conn.port}`);
  }
  const jwt = authenticate(t, hop, t.mesh.requestAuthentication.forWorkload(w, proxy.gatewayApiName));
  if (jwt.rejected !== undefined)
    return t.replyWithoutUpstream(
      hop,
      w,
      false,
      401,
      '-',
      `Jwt verification fails at gateway ${w.namespace}/${w.name}: ${jwt.rejected}`,
    );
  const policies = t.mesh.authorization.forWorkload(w, proxy.gatewayApiName);
  const decision = authorize(t, hop, w, conn, policies, jwt.principal);
  if (!decision.allowed) {
    return t.replyWithoutUpstream(
      hop,
      w,
      false,
      403,
      '-',
      `RBAC: access denied at gateway ${w.namespace}/${w.name}: ${decision.reason}`,
    );
  }
  const vhost = pickDomain(table.virtualHosts, hostWithoutPort(t.request.authority).toLowerCase());
  const noRoute = (why: string) => t.replyWithoutUpstream(hop, w, false, 404, 'NR', why);
  if (!vhost) {
    // A route configuration with no virtual host at all gets one that takes every host and has no route,
    // named by the server's port (docs/semantics.md, Gateways): answered 404 all the same.
    if (table.virtualHosts.size === 0)
      t.at(hop).virtualHost = `blackhole:${table.servers[0]?.port ?? conn.port}`;
    return noRoute(
      `gateway ${w.namespace}/${w.name} has no virtual host for ${hostWithoutPort(t.request.authority)} on ${table.name}`,
    );
  }
  t.at(hop).virtualHost = `${vhost.domain}:${conn.port}`;
  // A server with httpsRedirect makes its virtual hosts require TLS (docs/semantics.md, Gateways).
  if (!conn.externalTls && !conn.mtls && redirectsToHttps(table.servers, vhost.domain))
    return t.replyWithoutUpstream(hop, w, false, 301, '-', `${vhost.domain} requires https: redirected`);
  const context: MatchContext = {
    gateways: table.gatewayNames,
    port: table.servers[0]?.port ?? conn.port,
    sourceLabels: w.labels,
    sourceNamespace: w.namespace,
  };
  const routed = firstRoute(t, w, hop, vhost.routes, context);
  if (routed) return routed;
  return noRoute(
    `no route on gateway ${w.namespace}/${w.name} matches ${t.request.method} ${t.request.authority}${t.request.path}`,
  );
}

/** Does a server listing `domain` among its hosts (any namespace) redirect plaintext to https? */
function redirectsToHttps(servers: readonly GatewayServer[], domain: string): boolean {
  return servers.some(
    (s) => s.httpsRedirect === true && s.hosts.some((h) => hostMatches(h.slice(h.indexOf('/') + 1), domain)),
  );
}
