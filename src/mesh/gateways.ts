/**
 * Istio gateways (docs/semantics.md, Gateways): the pods Istio `Gateway` selectors pick, their merged
 * servers with port translation through the Services that select them, and per listen port a route table
 * whose virtual hosts are the intersection of server hosts and VirtualService hosts, routes merged across
 * VirtualServices with catch-alls last, and no catch-all virtual host (404 NR).
 */
import { specOf } from '../model/specs.ts';
import { MeshMemo } from './memo.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { compareStrings, type KubeObject } from '../model/object.ts';
import { istioGateways, listenerGatewayName, listenersOf, sortByPrecedence } from './gateway-api.ts';
import { isCatchAllRule } from './http-match.ts';
import { hostMatches } from './security.ts';
import { isExportedTo } from './services.ts';
import type { HttpRule, ResolvedVirtualService } from './virtual-services.ts';
import type { Workload } from './workloads.ts';
import { Label } from '../model/vocabulary.ts';
import type { GatewayProxy, GatewayServer, Mesh } from './compiled.ts';

/** A merged virtual host of a gateway: one domain, the routes of every VirtualService for it. */
export interface GatewayVirtualHost {
  domain: string;
  routes: { rule: HttpRule; vs: ResolvedVirtualService }[];
}

/** The HTTP route table of a gateway listen port. */
export interface GatewayRouteTable {
  name: string;
  gatewayNames: string[];
  servers: GatewayServer[];
  virtualHosts: Map<string, GatewayVirtualHost>;
}

/** The gateway pods of the mesh and their servers. */
export function gatewaysFrom(
  mesh: Mesh,
  networkingGateways: readonly KubeObject[],
): Map<Workload, GatewayProxy> {
  const out = new Map<Workload, GatewayProxy>();
  for (const gateway of networkingGateways) {
    const spec = specOf(gateway, 'networking.istio.io/Gateway');
    const selector = spec.selector ?? {};
    const name = `${gateway.metadata.namespace ?? 'default'}/${gateway.metadata.name ?? ''}`;
    for (const workload of mesh.workloads) {
      if (workload.proxy !== 'gateway' || Object.keys(selector).length === 0) continue;
      if (!labelsMatch(workload.labels, selector)) continue;
      const proxy = out.get(workload) ?? { workload, servers: [] };
      for (const server of spec.servers ?? []) {
        const number = server.port?.number ?? 0;
        const entry: GatewayServer = {
          gateway: name,
          port: number,
          listenPort: translatePort(mesh, workload, number),
          protocol: (server.port?.protocol ?? 'HTTP').toUpperCase(),
          hosts: server.hosts ?? [],
        };
        if (server.tls?.mode) entry.tlsMode = server.tls.mode;
        if (server.tls?.httpsRedirect === true) entry.httpsRedirect = true;
        proxy.servers.push(entry);
      }
      out.set(workload, proxy);
    }
  }
  for (const gateway of istioGateways(mesh.snapshot)) {
    const namespace = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    const servers: GatewayServer[] = listenersOf(gateway).map((l) => {
      const server: GatewayServer = {
        gateway: listenerGatewayName(namespace, name, l.name),
        port: l.port,
        listenPort: l.port,
        protocol: l.protocol.toUpperCase(),
        hosts: [l.hostname ?? '*'],
      };
      const tls = (l as { tls?: { mode?: string } }).tls?.mode;
      if (l.protocol === 'HTTPS') server.tlsMode = tls === 'Passthrough' ? 'PASSTHROUGH' : 'SIMPLE';
      return server;
    });
    for (const workload of mesh.workloads) {
      if (workload.namespace !== namespace || workload.labels[Label.GatewayName] !== name) continue;
      out.set(workload, { workload, servers, gatewayApiName: name });
    }
  }
  return out;
}

/**
 * Istio's `resolvePorts`: a Service selecting the gateway pod with `port == server port` makes the pod
 * listen on that Service's target port (first such Service wins); Services labelled
 * `experimental.istio.io/disable-gateway-port-translation` are skipped; otherwise the number as-is.
 */
function translatePort(mesh: Mesh, workload: Workload, serverPort: number): number {
  const candidates = mesh.services
    .filter((s) => s.namespace === workload.namespace && s.selector && Object.keys(s.selector).length > 0)
    .filter((s) => labelsMatch(workload.labels, s.selector ?? {}))
    .filter((s) => s.labels[Label.DisableGatewayPortTranslation] === undefined)
    .sort((a, b) => compareStrings(a.name, b.name));
  for (const service of candidates) {
    const port = service.ports.find((p) => p.port === serverPort);
    if (!port) continue;
    return typeof port.targetPort === 'number'
      ? port.targetPort
      : (workload.containerPorts.get(port.targetPort) ?? serverPort);
  }
  return serverPort;
}

const httpProtocols = new Set(['HTTP', 'HTTP2', 'GRPC', 'HTTPS', 'GRPC-WEB']);

/** A gateway server that serves HTTP (HTTPS it terminates included); the others pass TCP or TLS through. */
export function servesHttp(server: GatewayServer): boolean {
  return (
    httpProtocols.has(server.protocol) &&
    server.tlsMode !== 'PASSTHROUGH' &&
    server.tlsMode !== 'AUTO_PASSTHROUGH'
  );
}

/** The HTTP route table a gateway pod serves on a listen port (built once, cached on the mesh). */
export function gatewayRouteTable(
  mesh: Mesh,
  proxy: GatewayProxy,
  listenPort: number,
): GatewayRouteTable | undefined {
  const key = `${proxy.workload.namespace}/${proxy.workload.podName}|${listenPort}`;
  return routeTables.get(mesh, key, () => buildGatewayRouteTable(mesh, proxy, listenPort));
}

const routeTables = new MeshMemo<string, GatewayRouteTable | undefined>('gateway-route-tables');

function buildGatewayRouteTable(
  mesh: Mesh,
  proxy: GatewayProxy,
  listenPort: number,
): GatewayRouteTable | undefined {
  const servers = proxy.servers.filter((s) => s.listenPort === listenPort && servesHttp(s));
  if (servers.length === 0) return undefined;
  const gatewayNames = [...new Set(servers.map((s) => s.gateway))];
  const virtualHosts = new Map<string, GatewayVirtualHost>();
  const podNamespace = proxy.workload.namespace;
  for (const vs of mesh.virtualServices) {
    const bound = vs.gateways.filter((g) => gatewayNames.includes(g));
    if (bound.length === 0 || !isExportedTo(vs.exportTo, vs.namespace, podNamespace)) continue;
    const domains = new Set<string>();
    for (const server of servers.filter((s) => bound.includes(s.gateway))) {
      const gwNamespace = server.gateway.split('/')[0] ?? '';
      for (const entry of server.hosts) {
        const host = serverHostFor(entry, gwNamespace, vs.namespace);
        if (host === undefined) continue;
        for (const vsHost of vs.hosts) {
          const common = intersectHosts(host, vsHost);
          if (common) domains.add(common);
        }
      }
    }
    for (const domain of domains) {
      const vhost = virtualHosts.get(domain) ?? { domain, routes: [] };
      for (const rule of vs.http) vhost.routes.push({ rule, vs });
      virtualHosts.set(domain, vhost);
    }
  }
  // Merged routes keep their order, except that catch-all routes move to the end (Istio's SortVHostRoutes);
  // routes of several HTTPRoutes are ordered by Gateway API precedence across all of them.
  for (const vhost of virtualHosts.values()) {
    if (vhost.routes.every((r) => r.vs.gatewaySemantics)) {
      vhost.routes = sortByPrecedence(vhost.routes, (r) => r.rule);
      continue;
    }
    vhost.routes = [
      ...vhost.routes.filter((r) => !isCatchAllRule(r.rule)),
      ...vhost.routes.filter((r) => isCatchAllRule(r.rule)),
    ];
  }
  return { name: `http.${listenPort}`, gatewayNames, servers, virtualHosts };
}

/**
 * The host of a Gateway server's `hosts` entry (`[namespace/]host`, `.` for the Gateway's own namespace)
 * when the entry admits VirtualServices of `vsNamespace`, else undefined.
 */
export function serverHostFor(
  entry: string,
  gatewayNamespace: string,
  vsNamespace: string,
): string | undefined {
  const slash = entry.indexOf('/');
  if (slash < 0) return entry;
  const ns = entry.slice(0, slash);
  const admitted = ns === '*' || (ns === '.' ? vsNamespace === gatewayNamespace : ns === vsNamespace);
  return admitted ? entry.slice(slash + 1) : undefined;
}

/** The more specific of two hosts when one covers the other. */
export function intersectHosts(a: string, b: string): string | undefined {
  if (hostMatches(a, b)) return b;
  if (hostMatches(b, a)) return a;
  return undefined;
}

/** Envoy's virtual host choice among exact domains: exact, then the longest `*.suffix`, then `*`. */
export function pickDomain<T>(domains: ReadonlyMap<string, T>, host: string): T | undefined {
  const exact = domains.get(host);
  if (exact) return exact;
  let best: { length: number; value: T } | undefined;
  for (const [domain, value] of domains) {
    if (domain.startsWith('*.') && host.endsWith(domain.slice(1)) && (!best || domain.length > best.length))
      best = { length: domain.length, value };
  }
  if (best) return best.value;
  for (const [domain, value] of domains) {
    if (
      domain.endsWith('.*') &&
      host.startsWith(domain.slice(0, -1)) &&
      (!best || domain.length > best.length)
    )
      best = { length: domain.length, value };
  }
  return best?.value ?? domains.get('*');
}
