/**
 * A sidecar's outbound configuration (istio-dataplane-semantics.md §1.1–1.5): what it sees (export scope
 * and the Sidecar resource), which listener catches a connection, and the route table of an HTTP port:
 * virtual hosts from mesh-bound VirtualServices first (the port-80 rule for literal hosts), then one default
 * virtual host per remaining service, names and domains de-duplicated, then the catch-all.
 */
import { compareStrings, type KubeObject } from '../model/object.ts';
import { pickDomain } from './gateways.ts';
import type { Mesh } from './mesh.ts';
import { OutboundTrafficPolicy } from './mesh-config.ts';
import { hostMatches } from './security.ts';
import { isExportedTo, isHttpProtocol, Protocol, type MeshService, type ServicePort } from './services.ts';
import {
  Mesh as MeshGateway,
  orderKey,
  virtualServicesFor,
  type HttpRule,
  type ResolvedVirtualService,
} from './virtual-services.ts';
import type { Workload } from './workloads.ts';

/** What a sidecar sees: its visible services and mesh VirtualServices, and its outbound policy. */
export interface SidecarScope {
  key: string;
  namespace: string;
  /** The Sidecar resource in effect (`ns/name`), if any. */
  sidecar?: string;
  services: MeshService[];
  virtualServices: ResolvedVirtualService[];
  outboundTrafficPolicy: OutboundTrafficPolicy;
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
  /** `allow_any`, `block_all`, or none for sniffed (per-VIP) tables. */
  catchAll?: 'allow_any' | 'block_all';
}

/** The listener that catches a connection to `ip:port`. */
export type OutboundListener =
  | { kind: 'http'; name: string; port: number; table: SidecarRouteTable; service?: MeshService }
  | { kind: 'tcp'; name: string; service: MeshService; port: ServicePort }
  | { kind: 'none'; name: string };

type SidecarSpec = {
  workloadSelector?: { labels?: Record<string, string> };
  egress?: { hosts?: string[] }[];
  outboundTrafficPolicy?: { mode?: string };
};

/** The scope of a sidecar: Sidecar resource by selector, namespace, root namespace, else everything exported. */
export function sidecarScopeOf(mesh: Mesh, workload: Workload): SidecarScope {
  const sidecar = selectSidecar(mesh, workload);
  const key = `scope|${workload.namespace}|${sidecar ? `${sidecar.metadata.namespace}/${sidecar.metadata.name}` : ''}`;
  const cached = mesh.cache.get(key) as SidecarScope | undefined;
  if (cached) return cached;
  const spec = (sidecar?.['spec'] ?? {}) as SidecarSpec;
  const egressHosts = spec.egress?.flatMap((e) => e.hosts ?? []);
  const imported = (namespace: string, hostname: string): boolean =>
    egressHosts === undefined ||
    egressHosts.some((entry) => egressImports(entry, workload.namespace, namespace, hostname));
  const namespace = workload.namespace;
  const services = mesh.services.filter(
    (s) => isExportedTo(s.exportTo, s.namespace, namespace) && imported(s.namespace, s.hostname),
  );
  const virtualServices = virtualServicesFor(mesh.virtualServices, MeshGateway, namespace).filter((vs) =>
    vs.hosts.some((h) => imported(vs.namespace, h)),
  );
  const mode = spec.outboundTrafficPolicy?.mode;
  const scope: SidecarScope = {
    key,
    namespace,
    services,
    virtualServices,
    outboundTrafficPolicy:
      mode === 'REGISTRY_ONLY' || mode === 'ALLOW_ANY' ? mode : mesh.config.outboundTrafficPolicy,
  };
  if (sidecar) scope.sidecar = `${sidecar.metadata.namespace}/${sidecar.metadata.name}`;
  mesh.cache.set(key, scope);
  return scope;
}

function selectSidecar(mesh: Mesh, workload: Workload): KubeObject | undefined {
  const all = [...mesh.snapshot.list('networking.istio.io', 'Sidecar')].sort((a, b) =>
    compareStrings(orderKey(a), orderKey(b)),
  );
  const selectorOf = (s: KubeObject) => ((s['spec'] ?? {}) as SidecarSpec).workloadSelector?.labels;
  const inNs = all.filter((s) => s.metadata.namespace === workload.namespace);
  return (
    inNs.find((s) => {
      const sel = selectorOf(s);
      return sel !== undefined && Object.entries(sel).every(([k, v]) => workload.labels[k] === v);
    }) ??
    inNs.find((s) => selectorOf(s) === undefined) ??
    all.find((s) => s.metadata.namespace === mesh.config.rootNamespace && selectorOf(s) === undefined)
  );
}

/** Does a Sidecar egress host `ns/dnsName` (`.`, `*`, `~`) import a host of `namespace`? */
function egressImports(entry: string, ownNamespace: string, namespace: string, hostname: string): boolean {
  const [ns, host] = entry.includes('/') ? (entry.split('/') as [string, string]) : ['*', entry];
  if (ns === '~') return false;
  const nsOk = ns === '*' || (ns === '.' ? namespace === ownNamespace : ns === namespace);
  return nsOk && (host === '*' || hostMatches(host, hostname));
}

/** The listener of a connection to `ip:port` (§1.1): a VIP listener for TCP and sniffed ports, `0.0.0.0:<port>` for HTTP. */
export function outboundListener(
  mesh: Mesh,
  scope: SidecarScope,
  ip: string,
  port: number,
): OutboundListener {
  const service = mesh.serviceByVip.get(ip);
  const visible = service && scope.services.includes(service) ? service : undefined;
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
  const httpOnPort = scope.services.some((s) =>
    s.ports.some((p) => p.port === port && isHttpProtocol(p.protocol)),
  );
  if (httpOnPort)
    return { kind: 'http', name: `0.0.0.0_${port}`, port, table: httpRouteTable(mesh, scope, port) };
  return { kind: 'none', name: 'virtualOutbound' };
}

/** Services whose Envoy config exists on this port: aliases have none once aliasing is on (≥1.21). */
function portServices(mesh: Mesh, scope: SidecarScope, port: number): MeshService[] {
  return scope.services.filter(
    (s) =>
      s.ports.some((p) => p.port === port) &&
      !(s.type === 'ExternalName' && mesh.behaviour.externalNameAlias),
  );
}

/** The services a VirtualService host names on this port (exact, or covered by a wildcard host). */
function servicesForHost(
  mesh: Mesh,
  scope: SidecarScope,
  registry: readonly MeshService[],
  host: string,
  port: number,
): MeshService[] {
  const matched = registry.filter((s) =>
    host.includes('*') ? hostMatches(host, s.hostname) : s.hostname === host,
  );
  if (matched.length > 0 || !mesh.behaviour.aliasHostsAreRegistryServices) return matched;
  // From 1.24 an alias that declares the port is a registry service for VirtualService hosts (S7).
  return scope.services.filter(
    (s) => s.type === 'ExternalName' && s.hostname === host && s.ports.some((p) => p.port === port),
  );
}

/** The route table of the `0.0.0.0:<port>` HTTP listener, keyed by Host (cached per scope and port). */
export function httpRouteTable(mesh: Mesh, scope: SidecarScope, port: number): SidecarRouteTable {
  const key = `${scope.key}|http|${port}`;
  const cached = mesh.cache.get(key) as SidecarRouteTable | undefined;
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
        domains: domainsOf(mesh, s, scope.namespace),
        virtualService: vs,
        rules: vs.http,
        services: [s],
      });
    }
  }
  for (const s of registry) {
    if (used.has(s) || !isHttpOrSniffed(s)) continue;
    candidates.push({
      name: `${s.hostname}:${port}`,
      domains: domainsOf(mesh, s, scope.namespace),
      services: [s],
    });
  }
  const table = dedupe(`${port}`, candidates);
  table.catchAll =
    scope.outboundTrafficPolicy === OutboundTrafficPolicy.RegistryOnly ? 'block_all' : 'allow_any';
  mesh.cache.set(key, table);
  return table;
}

/** The per-VIP route table of a sniffed port: one virtual host for that service, domains `*`, no catch-all. */
function sniffedRouteTable(
  mesh: Mesh,
  scope: SidecarScope,
  service: MeshService,
  port: number,
): SidecarRouteTable {
  const key = `${scope.key}|sniffed|${service.hostname}|${port}`;
  const cached = mesh.cache.get(key) as SidecarRouteTable | undefined;
  if (cached) return cached;
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
  const table = dedupe(`${service.hostname}:${port}`, [vhost]);
  mesh.cache.set(key, table);
  return table;
}

/** Later virtual hosts with a name already taken are dropped; domains already claimed are removed from later ones. */
function dedupe(name: string, candidates: readonly SidecarVirtualHost[]): SidecarRouteTable {
  const names = new Set<string>();
  const domains = new Map<string, SidecarVirtualHost>();
  const virtualHosts: SidecarVirtualHost[] = [];
  for (const candidate of candidates) {
    if (names.has(candidate.name)) continue;
    names.add(candidate.name);
    const own = candidate.domains.filter((d) => !domains.has(d));
    if (own.length === 0) continue;
    const vhost = { ...candidate, domains: own };
    for (const d of own) domains.set(d, vhost);
    virtualHosts.push(vhost);
  }
  return { name, virtualHosts, domains };
}

/**
 * Istio's `generateVirtualHostDomains` for a sidecar (port ignored in host matching): the FQDN and its
 * absolute form, `name.ns` and `name.ns.svc`, bare `name` in the same namespace, the VIP, the same for every
 * alias of the service; headless services add `*.`-prefixed forms.
 */
export function domainsOf(mesh: Mesh, service: MeshService, proxyNamespace: string): string[] {
  const expand = (s: MeshService): string[] => {
    const out = [s.hostname, `${s.hostname}.`, `${s.name}.${s.namespace}`, `${s.name}.${s.namespace}.svc`];
    if (s.namespace === proxyNamespace) out.push(s.name);
    return out;
  };
  const domains = expand(service);
  for (const alias of mesh.aliasesOf.get(service.hostname) ?? []) domains.push(...expand(alias));
  if (service.type === 'Headless') domains.push(...domains.map((d) => `*.${d}`));
  if (service.vip) domains.push(service.vip);
  return domains;
}

/** The virtual host a Host header selects (port ignored, case-insensitive). */
export function selectVirtualHost(
  table: SidecarRouteTable,
  authority: string,
): SidecarVirtualHost | undefined {
  return pickDomain(table.domains, hostWithoutPort(authority).toLowerCase());
}

/** A Host header without its port (`[v6]:port` and `name:port`). */
export function hostWithoutPort(authority: string): string {
  if (authority.startsWith('[')) return authority.slice(0, authority.indexOf(']') + 1);
  const colon = authority.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(authority.slice(colon + 1)) ? authority.slice(0, colon) : authority;
}
