/**
 * A sidecar's outbound configuration (docs/semantics.md, Sidecar outbound): what it sees (export scope
 * and the Sidecar resource), which listener catches a connection, and the route table of an HTTP port:
 * virtual hosts from mesh-bound VirtualServices first (the port-80 rule for literal hosts), then one default
 * virtual host per remaining service, names and domains de-duplicated, then the catch-all.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { specIfKind, specOf } from '../model/specs.ts';
import { MeshMemo, MeshOnce } from './memo.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { addTo } from '../model/multimap.ts';
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import { intersectHosts, pickDomain } from './gateways.ts';
import { OutboundTrafficPolicy } from '../load/mesh-config.ts';
import { hostMatches } from './security.ts';
import { isExportedTo, isHttpProtocol, Protocol, type MeshService, type ServicePort } from './services.ts';
import {
  Mesh as MeshGateway,
  virtualServicesFor,
  type HttpRule,
  type ResolvedVirtualService,
} from './virtual-services.ts';
import type { Workload } from './workloads.ts';
import type { Mesh } from './compiled.ts';

/**
 * What a sidecar sees: its visible services and mesh VirtualServices, and its outbound policy. Sidecars of
 * every namespace share one scope when no Sidecar resource applies and every export is public: Istio then
 * gives them the same configuration except for same-namespace short names, which lookups add.
 */
export interface SidecarScope {
  key: string;
  /** The Sidecar resource in effect (`ns/name`), if any. */
  sidecar?: string;
  services: MeshService[];
  serviceSet: ReadonlySet<MeshService>;
  /** The scope sees every service of the mesh (no export or Sidecar restriction). */
  seesAll: boolean;
  /** Ports on which some visible service speaks HTTP (a `0.0.0.0:<port>` HTTP listener exists). */
  httpPorts: ReadonlySet<number>;
  virtualServices: ResolvedVirtualService[];
  outboundTrafficPolicy: OutboundTrafficPolicy;
  /** HTTP route tables built so far, by port. */
  tables: Map<number, SidecarRouteTable>;
}

/** A virtual host of a sidecar route table. */
export interface SidecarVirtualHost {
  name: string;
  domains: string[];
  /** The rules of its VirtualService, or none for a service's default route. */
  virtualService?: ResolvedVirtualService;
  rules?: HttpRule[];
  /** The services it was built for (default route goes to the first). */
  services: MeshService[];
}

/** The route table of one outbound HTTP listener port (`"<port>"`) or one sniffed VIP (`"<fqdn>:<port>"`). */
export interface SidecarRouteTable {
  name: string;
  virtualHosts: SidecarVirtualHost[];
  domains: Map<string, SidecarVirtualHost>;
  /** Service (or alias) FQDN → the virtual host that takes its bare short name for clients of its namespace. */
  shortNames: Map<string, SidecarVirtualHost>;
  /** `allow_any`, `block_all`, or none for sniffed (per-VIP) tables. */
  catchAll?: 'allow_any' | 'block_all';
}

/** The listener that catches a connection to `ip:port`. */
export type OutboundListener =
  | { kind: 'http'; name: string; port: number; table: SidecarRouteTable; service?: MeshService }
  | { kind: 'tcp'; name: string; service: MeshService; port: ServicePort }
  | { kind: 'none'; name: string };

const scopeOfWorkload = new MeshMemo<Workload, SidecarScope>('scope-of-workload');
const scopes = new MeshMemo<string, SidecarScope>('sidecar-scopes');
const sidecars = new MeshOnce<KubeObject[]>('sidecars');
const sniffedTables = new MeshMemo<string, SidecarRouteTable>('sniffed-route-tables');
/** The mesh's services and VirtualServices by namespace, and the position of each in its list. */
const servicesByNamespace = new MeshOnce<Map<string, MeshService[]>>('services-by-namespace');
const virtualServicesByNamespace = new MeshOnce<Map<string, ResolvedVirtualService[]>>(
  'virtual-services-by-namespace',
);
const servicePositions = new MeshOnce<Map<MeshService, number>>('service-positions');
const virtualServicePositions = new MeshOnce<Map<ResolvedVirtualService, number>>(
  'virtual-service-positions',
);

/** The scope of a sidecar: Sidecar resource by selector, namespace, root namespace, else everything exported. */
export function sidecarScopeOf(mesh: Mesh, workload: Workload): SidecarScope {
  // Each workload's scope is looked up once (choosing its Sidecar scans the namespace's Sidecars).
  return scopeOfWorkload.get(mesh, workload, () => buildSidecarScope(mesh, workload));
}

function buildSidecarScope(mesh: Mesh, workload: Workload): SidecarScope {
  const sidecar = selectSidecar(mesh, workload);
  const shared = !sidecar && !mesh.exportsRestricted;
  const key = shared
    ? 'scope|*'
    : `scope|${workload.namespace}|${sidecar ? `${sidecar.metadata.namespace}/${sidecar.metadata.name}` : ''}`;
  return scopes.get(mesh, key, () => newSidecarScope(mesh, workload, sidecar, key));
}

/**
 * A Sidecar egress host `namespace/host` as istiod splits it (at the first `/`): `.` is the Sidecar's own
 * namespace; an entry without a namespace stands for any (`*`), and `namespaced` is false.
 */
export function egressHostOf(
  entry: string,
  ownNamespace: string,
): { ns: string; host: string; namespaced: boolean } {
  const slash = entry.indexOf('/');
  if (slash < 0) return { ns: '*', host: entry, namespaced: false };
  const ns = entry.slice(0, slash);
  return { ns: ns === '.' ? ownNamespace : ns, host: entry.slice(slash + 1), namespaced: true };
}

function newSidecarScope(
  mesh: Mesh,
  workload: Workload,
  sidecar: KubeObject | undefined,
  key: string,
): SidecarScope {
  const spec = specIfKind(sidecar, 'networking.istio.io/Sidecar');
  const namespace = workload.namespace;
  // Egress hosts parsed once, with `.` made this namespace: a scope is built for every namespace a
  // root-namespace Sidecar covers, so the work per entry must not grow with the mesh.
  const egress = spec.egress
    ?.flatMap((e) => e.hosts ?? [])
    .map((entry) => egressHostOf(entry, namespace))
    .filter((e) => e.ns !== '~');
  const imported = (ns: string, hostname: string): boolean =>
    egress === undefined ||
    egress.some((e) => (e.ns === '*' || e.ns === ns) && (e.host === '*' || hostMatches(e.host, hostname)));
  const exported = (s: MeshService) => isExportedTo(s.exportTo, s.namespace, namespace);
  let services: MeshService[];
  if (egress === undefined || egress.some((e) => e.ns === '*')) {
    services = mesh.services.filter((s) => exported(s) && imported(s.namespace, s.hostname));
  } else {
    // Only the namespaces the entries name can contribute: look at their services alone.
    const byNamespace = byNamespaceIndex(mesh, servicesByNamespace, mesh.services);
    const chosen: MeshService[] = [];
    for (const ns of new Set(egress.map((e) => e.ns)))
      for (const s of byNamespace.get(ns) ?? [])
        if (exported(s) && imported(s.namespace, s.hostname)) chosen.push(s);
    services = inMeshOrder(mesh, servicePositions, mesh.services, chosen);
  }
  // The VirtualServices of the namespaces the egress names (all of them when it names `*`).
  const candidates =
    egress === undefined || egress.some((e) => e.ns === '*')
      ? mesh.virtualServices
      : inMeshOrder(
          mesh,
          virtualServicePositions,
          mesh.virtualServices,
          [...new Set(egress.map((e) => e.ns))].flatMap(
            (ns) => byNamespaceIndex(mesh, virtualServicesByNamespace, mesh.virtualServices).get(ns) ?? [],
          ),
        );
  // A VirtualService is imported when one of its hosts meets an egress host (a wildcard on either side).
  const importsRoutes = (ns: string, host: string): boolean =>
    egress === undefined ||
    egress.some(
      (e) => (e.ns === '*' || e.ns === ns) && (e.host === '*' || intersectHosts(e.host, host) !== undefined),
    );
  const virtualServices = virtualServicesFor(candidates, MeshGateway, namespace).filter((vs) =>
    vs.hosts.some((h) => importsRoutes(vs.namespace, h)),
  );
  const httpPorts = new Set<number>();
  for (const svc of services)
    for (const p of svc.ports) if (isHttpProtocol(p.protocol)) httpPorts.add(p.port);
  const mode = spec.outboundTrafficPolicy?.mode;
  const scope: SidecarScope = {
    key,
    services,
    serviceSet: new Set(services),
    seesAll: services.length === mesh.services.length,
    httpPorts,
    virtualServices,
    outboundTrafficPolicy:
      mode === 'REGISTRY_ONLY' || mode === 'ALLOW_ANY' ? mode : mesh.config.outboundTrafficPolicy,
    tables: new Map(),
  };
  if (sidecar) scope.sidecar = `${sidecar.metadata.namespace}/${sidecar.metadata.name}`;
  return scope;
}

/** A list of the mesh (services, VirtualServices) by namespace, built once per mesh. */
function byNamespaceIndex<T extends { namespace: string }>(
  mesh: Mesh,
  memo: MeshOnce<Map<string, T[]>>,
  all: readonly T[],
): Map<string, T[]> {
  return memo.get(mesh, () => {
    const index = new Map<string, T[]>();
    for (const item of all) addTo(index, item.namespace, item);
    return index;
  });
}

/** Some items of a mesh list, in the list's order (which decides precedence). */
function inMeshOrder<T extends object>(
  mesh: Mesh,
  memo: MeshOnce<Map<T, number>>,
  all: readonly T[],
  some: readonly T[],
): T[] {
  const at = memo.get(mesh, () => new Map(all.map((item, i) => [item, i])));
  return [...new Set(some)].sort((a, b) => (at.get(a) ?? 0) - (at.get(b) ?? 0));
}

/**
 * The Sidecar resource that applies to a workload: the first (oldest) of its namespace whose selector
 * matches it, else its namespace's one without a selector, else the root namespace's one without a selector.
 */
export function selectSidecar(mesh: Mesh, workload: Workload): KubeObject | undefined {
  const all = sidecars.get(mesh, () =>
    [...mesh.snapshot.list(GroupKind.Sidecar)].sort((a, b) => compareStrings(orderKey(a), orderKey(b))),
  );
  if (all.length === 0) return undefined;
  const selectorOf = (s: KubeObject) => specOf(s, 'networking.istio.io/Sidecar').workloadSelector?.labels;
  const inNs = all.filter((s) => s.metadata.namespace === workload.namespace);
  return (
    inNs.find((s) => {
      const sel = selectorOf(s);
      return sel !== undefined && labelsMatch(workload.labels, sel);
    }) ??
    inNs.find((s) => selectorOf(s) === undefined) ??
    all.find((s) => s.metadata.namespace === mesh.config.rootNamespace && selectorOf(s) === undefined)
  );
}

/** Is the service visible in the scope? */
export function sees(scope: SidecarScope, service: MeshService): boolean {
  return scope.seesAll || scope.serviceSet.has(service);
}

/** The listener of a connection to `ip:port` (docs/semantics.md, Sidecar outbound): a VIP listener for TCP and sniffed ports, `0.0.0.0:<port>` for HTTP. */
export function outboundListener(
  mesh: Mesh,
  scope: SidecarScope,
  ip: string,
  port: number,
): OutboundListener {
  const service = mesh.serviceByVip.get(ip);
  const visible = service && sees(scope, service) ? service : undefined;
  const servicePort = visible?.ports.find((p) => p.port === port);
  if (visible && servicePort && !isHttpProtocol(servicePort.protocol)) {
    if (servicePort.protocol === Protocol.Unsupported) {
      return {
        kind: 'http',
        name: `${ip}_${port}`,
        port,
        table: sniffedRouteTable(mesh, scope, visible, port),
        service: visible,
      };
    }
    return { kind: 'tcp', name: `${ip}_${port}`, service: visible, port: servicePort };
  }
  // A service without an address whose endpoints are reached directly (headless, or an entry resolved
  // NONE that lists endpoints) gets a listener per endpoint address on its TCP and sniffed ports.
  const direct = endpointListenerService(mesh, scope, ip, port);
  if (direct) {
    if (direct.port.protocol === Protocol.Unsupported) {
      const table = sniffedRouteTable(mesh, scope, direct.service, port);
      return { kind: 'http', name: `${ip}_${port}`, port, table, service: direct.service };
    }
    return { kind: 'tcp', name: `${ip}_${port}`, service: direct.service, port: direct.port };
  }
  if (scope.httpPorts.has(port))
    return { kind: 'http', name: `0.0.0.0_${port}`, port, table: httpRouteTable(mesh, scope, port) };
  // A ServiceEntry without addresses listens on every address of its ports: a sniffed port routes by
  // Host through the port's table, a TCP port goes to the first such entry.
  const wildcard = visibleWithoutAddress(scope, port);
  if (wildcard) {
    if (wildcard.port.protocol === Protocol.Unsupported)
      return { kind: 'http', name: `0.0.0.0_${port}`, port, table: httpRouteTable(mesh, scope, port) };
    if (!isHttpProtocol(wildcard.port.protocol))
      return { kind: 'tcp', name: `0.0.0.0_${port}`, service: wildcard.service, port: wildcard.port };
  }
  return { kind: 'none', name: 'virtualOutbound' };
}

const endpointServices = new MeshOnce<Map<string, MeshService[]>>('endpoint-listener-services');

/** Endpoint address → the services without an address that have an endpoint there (built once per mesh). */
export function endpointListenerIndex(mesh: Mesh): ReadonlyMap<string, MeshService[]> {
  return endpointServices.get(mesh, () => {
    const byIp = new Map<string, MeshService[]>();
    for (const s of mesh.services) {
      const passthrough =
        s.type === 'Headless' ||
        (s.type === 'ServiceEntry' && s.vip === undefined && s.entry?.resolution === 'NONE');
      if (passthrough) for (const e of s.endpoints) addTo(byIp, e.ip, s);
    }
    return byIp;
  });
}

/**
 * The visible service without an address that has an endpoint at `ip` and a TCP or sniffed `port` (the
 * first in the scope's order), with that port: Istio listens on each endpoint's address for these.
 */
function endpointListenerService(
  mesh: Mesh,
  scope: SidecarScope,
  ip: string,
  port: number,
): { service: MeshService; port: ServicePort } | undefined {
  for (const service of endpointListenerIndex(mesh).get(ip) ?? []) {
    if (!sees(scope, service)) continue;
    const servicePort = service.ports.find((p) => p.port === port);
    if (servicePort && !isHttpProtocol(servicePort.protocol) && servicePort.protocol !== Protocol.UDP)
      return { service, port: servicePort };
  }
  return undefined;
}

/**
 * The first visible ServiceEntry host without an address that declares the port, with that port: those
 * exported to chosen namespaces (this one among them) before those exported everywhere, each in creation
 * order, as istiod lists a namespace's services.
 */
function visibleWithoutAddress(
  scope: SidecarScope,
  port: number,
): { service: MeshService; port: ServicePort } | undefined {
  for (const everywhere of [false, true])
    for (const service of scope.services) {
      if (service.type !== 'ServiceEntry' || service.vip !== undefined) continue;
      if (service.exportTo.includes('*') !== everywhere) continue;
      const servicePort = service.ports.find((p) => p.port === port);
      if (servicePort) return { service, port: servicePort };
    }
  return undefined;
}

/** Services whose Envoy config exists on this port, by hostname: aliases have none once aliasing is on (≥1.21). */
function portServices(mesh: Mesh, scope: SidecarScope, port: number): Map<string, MeshService> {
  const out = new Map<string, MeshService>();
  for (const s of scope.services) {
    if (s.type === 'ExternalName' && mesh.behaviour.externalNameAlias) continue;
    if (s.ports.some((p) => p.port === port)) out.set(s.hostname, s);
  }
  return out;
}

/** The services a VirtualService host names on this port (exact, or covered by a wildcard host). */
function servicesForHost(
  mesh: Mesh,
  scope: SidecarScope,
  registry: ReadonlyMap<string, MeshService>,
  host: string,
  port: number,
): MeshService[] {
  if (host.includes('*')) return [...registry.values()].filter((s) => hostMatches(host, s.hostname));
  const exact = registry.get(host);
  if (exact) return [exact];
  if (!mesh.behaviour.aliasHostsAreRegistryServices) return [];
  // From 1.24 an alias that declares the port is a registry service for VirtualService hosts (docs/semantics.md, V7).
  const alias = mesh.serviceByHostname.get(host);
  return alias?.type === 'ExternalName' && sees(scope, alias) && alias.ports.some((p) => p.port === port)
    ? [alias]
    : [];
}

/** The route table of the `0.0.0.0:<port>` HTTP listener, keyed by Host (cached per scope and port). */
export function httpRouteTable(mesh: Mesh, scope: SidecarScope, port: number): SidecarRouteTable {
  const cached = scope.tables.get(port);
  if (cached) return cached;
  const registry = portServices(mesh, scope, port);
  const isHttpOrSniffed = (s: MeshService) =>
    s.ports.some(
      (p) => p.port === port && (isHttpProtocol(p.protocol) || p.protocol === Protocol.Unsupported),
    );
  const used = new Set<MeshService>();
  const candidates: SidecarVirtualHost[] = [];
  for (const vs of scope.virtualServices) {
    const literal: string[] = [];
    const matched: MeshService[] = [];
    for (const host of vs.hosts) {
      const services = servicesForHost(mesh, scope, registry, host, port);
      if (services.length > 0) matched.push(...services);
      else literal.push(host);
    }
    const httpServices = matched.filter(isHttpOrSniffed);
    for (const s of matched) used.add(s);
    // Literal hosts get a virtual host on this port only beside HTTP services of the VS, or on port 80.
    if (httpServices.length === 0 && port !== 80) continue;
    for (const host of literal)
      candidates.push({
        name: `${host}:${port}`,
        domains: [host],
        virtualService: vs,
        rules: vs.http,
        services: [],
      });
    for (const s of httpServices) {
      candidates.push({
        name: `${s.hostname}:${port}`,
        domains: domainsOf(mesh, s),
        virtualService: vs,
        rules: vs.http,
        services: [s],
      });
    }
  }
  for (const s of registry.values()) {
    if (used.has(s) || !isHttpOrSniffed(s)) continue;
    candidates.push({ name: `${s.hostname}:${port}`, domains: domainsOf(mesh, s), services: [s] });
  }
  const table = dedupe(mesh, `${port}`, candidates);
  table.catchAll =
    scope.outboundTrafficPolicy === OutboundTrafficPolicy.RegistryOnly ? 'block_all' : 'allow_any';
  scope.tables.set(port, table);
  return table;
}

/** The per-VIP route table of a sniffed port: one virtual host for that service, domains `*`, no catch-all. */
function sniffedRouteTable(
  mesh: Mesh,
  scope: SidecarScope,
  service: MeshService,
  port: number,
): SidecarRouteTable {
  const key = `${scope.key}|${service.hostname}|${port}`;
  return sniffedTables.get(mesh, key, () => {
    const vs = scope.virtualServices.find((v) =>
      v.hosts.some((h) => (h.includes('*') ? hostMatches(h, service.hostname) : h === service.hostname)),
    );
    const vhost: SidecarVirtualHost = vs
      ? {
          name: `${service.hostname}:${port}`,
          domains: ['*'],
          virtualService: vs,
          rules: vs.http,
          services: [service],
        }
      : { name: `${service.hostname}:${port}`, domains: ['*'], services: [service] };
    return dedupe(mesh, `${service.hostname}:${port}`, [vhost]);
  });
}

/** Later virtual hosts with a name already taken are dropped; domains already claimed are removed from later ones. */
function dedupe(mesh: Mesh, name: string, candidates: readonly SidecarVirtualHost[]): SidecarRouteTable {
  const names = new Set<string>();
  const domains = new Map<string, SidecarVirtualHost>();
  const shortNames = new Map<string, SidecarVirtualHost>();
  const virtualHosts: SidecarVirtualHost[] = [];
  for (const candidate of candidates) {
    if (names.has(candidate.name)) continue;
    names.add(candidate.name);
    const own = candidate.domains.filter((d) => !domains.has(d));
    if (own.length === 0) continue;
    const vhost = { ...candidate, domains: own };
    for (const d of own) domains.set(d, vhost);
    for (const s of candidate.services) {
      for (const named of [s, ...(mesh.aliasesOf.get(s.hostname) ?? [])])
        if (!shortNames.has(named.hostname)) shortNames.set(named.hostname, vhost);
    }
    virtualHosts.push(vhost);
  }
  return { name, virtualHosts, domains, shortNames };
}

/**
 * Istio's `generateVirtualHostDomains` for a sidecar (port ignored in host matching): the FQDN and its
 * absolute form, `name.ns` and `name.ns.svc`, the VIP, the same for every alias of the service; headless
 * services add `*.`-prefixed forms. The bare `name` of clients in the service's namespace is in `shortNames`.
 */
function domainsOf(mesh: Mesh, service: MeshService): string[] {
  if (service.entry) return [service.hostname, ...service.entry.addresses];
  const expand = (s: MeshService): string[] => [
    s.hostname,
    `${s.hostname}.`,
    `${s.name}.${s.namespace}`,
    `${s.name}.${s.namespace}.svc`,
  ];
  const domains = expand(service);
  for (const alias of mesh.aliasesOf.get(service.hostname) ?? []) domains.push(...expand(alias));
  if (service.type === 'Headless') domains.push(...domains.map((d) => `*.${d}`));
  if (service.vip) domains.push(service.vip);
  return domains;
}

/** The virtual host a Host header selects for a client in `namespace` (port ignored, case-insensitive). */
export function selectVirtualHost(
  mesh: Mesh,
  table: SidecarRouteTable,
  authority: string,
  namespace: string,
): SidecarVirtualHost | undefined {
  const host = hostWithoutPort(authority).toLowerCase();
  if (!host.includes('.')) {
    const short = table.shortNames.get(`${host}.${namespace}.svc.${mesh.clusterDomain}`);
    if (short) return short;
  }
  return pickDomain(table.domains, host);
}

/** A Host header without its port (`[v6]:port` and `name:port`). */
export function hostWithoutPort(authority: string): string {
  if (authority.startsWith('[')) return authority.slice(0, authority.indexOf(']') + 1);
  const colon = authority.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(authority.slice(colon + 1)) ? authority.slice(0, colon) : authority;
}
