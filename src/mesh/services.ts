/**
 * The service registry: Kubernetes Services with their ports (protocol as Istio derives it), virtual IPs,
 * ExternalName targets, export scope and endpoints (from Endpoints, EndpointSlices or the selector).
 */
import { isIpv4, isIpv6 } from './annotations.ts';
import { specOf, type ServiceEntrySpec } from '../model/specs.ts';
import { addTo } from '../model/multimap.ts';
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import type { Workload } from './workloads.ts';
import { MeshOnce } from './memo.ts';
import { Annotation, AppProtocol, Label, GroupKind } from '../model/vocabulary.ts';

/** Istio's port protocols. `Unsupported` means auto-detected ("sniffed"). */
export const Protocol = {
  HTTP: 'HTTP',
  HTTP2: 'HTTP2',
  GRPC: 'GRPC',
  GRPCWeb: 'GRPC-Web',
  HTTPS: 'HTTPS',
  TLS: 'TLS',
  TCP: 'TCP',
  UDP: 'UDP',
  Unsupported: 'Unsupported',
} as const;
export type Protocol = (typeof Protocol)[keyof typeof Protocol];

/** True for the protocols whose listeners route by Host on `0.0.0.0:<port>`. */
export function isHttpProtocol(p: Protocol): boolean {
  return p === Protocol.HTTP || p === Protocol.HTTP2 || p === Protocol.GRPC || p === Protocol.GRPCWeb;
}

/** One port of a Service. */
export interface ServicePort {
  name: string;
  port: number;
  targetPort: number | string;
  protocol: Protocol;
}

/** One endpoint of a Service: an address, its workload when known, and the target port per service port. */
export interface ServiceEndpoint {
  ip: string;
  workload?: Workload;
  /** The endpoint port for a service port (by service port name, or number when unnamed). */
  portFor(servicePort: ServicePort): number;
}

/** A port of a Service that sends to a workload, with the port it arrives on at the workload's pod. */
export interface WorkloadServicePort {
  service: MeshService;
  port: ServicePort;
  targetPort: number;
}

const byWorkload = new MeshOnce<Map<Workload, WorkloadServicePort[]>>('service ports by workload');

/**
 * The Service ports whose endpoints include a workload's pod, each with its target port there, in the
 * mesh's Service order; indexed once per mesh (a walk over every endpoint), not searched per workload.
 */
export function servicePortsOf(
  mesh: { services: readonly MeshService[] },
  workload: Workload,
): readonly WorkloadServicePort[] {
  const index = byWorkload.get(mesh, () => {
    const out = new Map<Workload, WorkloadServicePort[]>();
    for (const service of mesh.services)
      for (const port of service.ports) {
        const seen = new Set<string>();
        for (const e of service.endpoints) {
          if (!e.workload) continue;
          const targetPort = e.portFor(port);
          const key = `${e.workload.namespace}/${e.workload.podName}/${targetPort}`;
          if (seen.has(key)) continue;
          seen.add(key);
          addTo(out, e.workload, { service, port, targetPort });
        }
      }
    return out;
  });
  return index.get(workload) ?? [];
}

/** How a ServiceEntry's endpoints are found (its `resolution`). */
export type EntryResolution = 'NONE' | 'STATIC' | 'DNS' | 'DNS_ROUND_ROBIN' | 'DYNAMIC_DNS';

/** What a ServiceEntry adds to the registry service of one of its hosts (docs/semantics.md, ServiceEntry). */
export interface ServiceEntryFacts {
  resolution: EntryResolution;
  /** `location: MESH_EXTERNAL` (the default is MESH_EXTERNAL). */
  external: boolean;
  /** Its `addresses` (IPs; a CIDR of one address as that address), in order. */
  addresses: string[];
}

/**
 * A service in the registry: a Kubernetes Service, or one host of a ServiceEntry (type `ServiceEntry`,
 * named by its host, with the entry's facts in `entry`).
 */
export interface MeshService {
  namespace: string;
  name: string;
  hostname: string;
  type: 'ClusterIP' | 'Headless' | 'ExternalName' | 'ServiceEntry';
  /** The address clients connect to (a ServiceEntry's first address). */
  vip?: string;
  entry?: ServiceEntryFacts;
  externalName?: string;
  ports: ServicePort[];
  selector?: Readonly<Record<string, string>>;
  labels: Readonly<Record<string, string>>;
  exportTo: string[];
  endpoints: ServiceEndpoint[];
  object: KubeObject;
}

/** Istio's `ConvertProtocol`: appProtocol, then the port-name prefix, then well-known ports; else sniffed. */
export function protocolOf(port: {
  name?: string;
  port?: number;
  protocol?: string;
  appProtocol?: string;
}): Protocol {
  if ((port.protocol ?? 'TCP').toUpperCase() === 'UDP') return Protocol.UDP;
  const fromName = (name: string): Protocol | undefined => {
    const lower = name.toLowerCase();
    if (lower === AppProtocol.H2c) return Protocol.HTTP2;
    if (lower === AppProtocol.Ws) return Protocol.HTTP;
    if (lower === AppProtocol.Wss) return Protocol.HTTPS;
    if (lower.startsWith('grpc-web')) return Protocol.GRPCWeb;
    const prefix = lower.split('-')[0] ?? '';
    const byPrefix: Record<string, Protocol> = {
      http: Protocol.HTTP,
      http2: Protocol.HTTP2,
      grpc: Protocol.GRPC,
      https: Protocol.HTTPS,
      tls: Protocol.TLS,
      tcp: Protocol.TCP,
      mongo: Protocol.TCP,
      redis: Protocol.TCP,
      mysql: Protocol.TCP,
    };
    return byPrefix[prefix];
  };
  const byApp = port.appProtocol ? fromName(port.appProtocol) : undefined;
  if (byApp) return byApp;
  const byName = port.name ? fromName(port.name) : undefined;
  if (byName) return byName;
  if (port.port !== undefined && [25, 53, 3306, 27017].includes(port.port)) return Protocol.TCP;
  return Protocol.Unsupported;
}

/** Builds the registry's services, assigning stable virtual IPs to Services the input gave none. */
export function servicesFrom(
  snapshot: Snapshot,
  workloads: readonly Workload[],
  clusterDomain: string,
): MeshService[] {
  let assigned = 0;
  const services: MeshService[] = [];
  const byNamespace = new Map<string, Workload[]>();
  for (const w of workloads) addTo(byNamespace, w.namespace, w);
  const byIp = new Map(workloads.map((w) => [w.ip, w]));
  for (const object of snapshot.list(GroupKind.Service)) {
    const spec = specOf(object, '/Service');
    const namespace = object.metadata.namespace ?? 'default';
    const name = object.metadata.name ?? '';
    const type =
      spec.type === 'ExternalName' ? 'ExternalName' : spec.clusterIP === 'None' ? 'Headless' : 'ClusterIP';
    let vip: string | undefined;
    if (type === 'ClusterIP')
      vip = spec.clusterIP ?? `10.255.${Math.floor(assigned / 250)}.${(assigned++ % 250) + 2}`;
    const ports: ServicePort[] = (spec.ports ?? []).map((p) => ({
      name: p.name ?? '',
      port: p.port ?? 0,
      targetPort: p.targetPort ?? p.port ?? 0,
      protocol: protocolOf(p),
    }));
    const exportTo = object.metadata.annotations?.[Annotation.ExportTo];
    const service: MeshService = {
      namespace,
      name,
      hostname: `${name}.${namespace}.svc.${clusterDomain}`,
      type,
      ports,
      labels: object.metadata.labels ?? {},
      exportTo: exportTo
        ? exportTo
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : [],
      endpoints: [],
      object,
    };
    if (vip !== undefined) service.vip = vip;
    if (spec.externalName) service.externalName = spec.externalName.replace(/\.$/, '');
    if (spec.selector) service.selector = spec.selector;
    service.endpoints =
      type === 'ExternalName' ? [] : endpointsOf(snapshot, service, byNamespace.get(namespace) ?? [], byIp);
    services.push(service);
  }
  return services;
}

/**
 * The registry services of ServiceEntries (docs/semantics.md, ServiceEntry): one per host, in order of
 * creation (then name, then namespace); ports take their protocol from `protocol` alone (none: sniffed);
 * endpoints are the entry's `endpoints`, else the workloads its `workloadSelector` picks in its namespace,
 * else, for DNS resolution, the host itself. A host already named by an older entry of the same namespace
 * adds its ports to that one when both resolve alike; a Kubernetes Service's hostname is never taken.
 */
export function serviceEntryServices(
  snapshot: Snapshot,
  workloads: readonly Workload[],
  taken: ReadonlySet<string>,
): MeshService[] {
  const byIp = new Map(workloads.map((w) => [w.ip, w]));
  const entries = [...snapshot.list(GroupKind.ServiceEntry)].sort((a, b) =>
    compareStrings(orderKey(a), orderKey(b)),
  );
  const out: MeshService[] = [];
  const byHost = new Map<string, MeshService>();
  for (const object of entries) {
    const spec = specOf(object, 'networking.istio.io/ServiceEntry');
    const namespace = object.metadata.namespace ?? 'default';
    const resolution = (spec.resolution ?? 'NONE') as EntryResolution;
    const addresses = (spec.addresses ?? []).flatMap((a) => {
      const [ip = '', bits] = a.split('/');
      const single = bits === undefined || bits === (ip.includes(':') ? '128' : '32');
      return single && (isIpv4(ip) || isIpv6(ip)) ? [ip] : [];
    });
    const ports: ServicePort[] = (spec.ports ?? []).map((p) => ({
      name: p.name ?? '',
      port: p.number ?? 0,
      targetPort: p.targetPort ?? p.number ?? 0,
      protocol: entryProtocol(p.protocol),
    }));
    for (const host of spec.hosts ?? []) {
      if (taken.has(`${namespace}/${host}`)) continue;
      const earlier = byHost.get(`${namespace}/${host}`);
      if (earlier) {
        if (earlier.entry?.resolution === resolution)
          for (const p of ports) if (!earlier.ports.some((q) => q.port === p.port)) earlier.ports.push(p);
        continue;
      }
      const service: MeshService = {
        namespace,
        name: host,
        hostname: host,
        type: 'ServiceEntry',
        entry: { resolution, external: spec.location !== 'MESH_INTERNAL', addresses },
        ports: [...ports],
        labels: object.metadata.labels ?? {},
        exportTo: [...(spec.exportTo ?? [])],
        endpoints: [],
        object,
      };
      if (addresses[0] !== undefined) service.vip = addresses[0];
      service.endpoints = entryEndpoints(spec, service, workloads, byIp);
      byHost.set(`${namespace}/${host}`, service);
      out.push(service);
    }
  }
  return out;
}

/** A ServiceEntry port's protocol: its `protocol` field, case-insensitive; none or unknown is sniffed. */
function entryProtocol(name: string | undefined): Protocol {
  const upper = (name ?? '').toUpperCase();
  const known = Object.values(Protocol).find((p) => p.toUpperCase() === upper);
  return known ?? Protocol.Unsupported;
}

function entryEndpoints(
  spec: ServiceEntrySpec,
  service: MeshService,
  workloads: readonly Workload[],
  byIp: ReadonlyMap<string, Workload>,
): ServiceEndpoint[] {
  const named = (ports: Readonly<Record<string, number>> | undefined) => (sp: ServicePort) =>
    ports?.[sp.name] ?? (typeof sp.targetPort === 'number' ? sp.targetPort : sp.port);
  if (spec.endpoints !== undefined && spec.endpoints.length > 0)
    return spec.endpoints.map((e) => endpoint(e.address ?? '', byIp, named(e.ports)));
  const resolution = service.entry?.resolution;
  const selector = spec.workloadSelector?.labels;
  if (selector && resolution !== 'DNS' && resolution !== 'DNS_ROUND_ROBIN') {
    return workloads
      .filter((w) => w.namespace === service.namespace && labelsMatch(w.labels, selector))
      .map((workload) => ({ ip: workload.ip, workload, portFor: named(undefined) }));
  }
  if (resolution === 'DNS' || resolution === 'DNS_ROUND_ROBIN')
    return service.hostname.startsWith('*') ? [] : [{ ip: service.hostname, portFor: named(undefined) }];
  return [];
}

/** Endpoints from the Endpoints object, else EndpointSlices, else the selector over the namespace's workloads. */
function endpointsOf(
  snapshot: Snapshot,
  service: MeshService,
  namespaceWorkloads: readonly Workload[],
  byIp: ReadonlyMap<string, Workload>,
): ServiceEndpoint[] {
  const endpoints = snapshot.get(GroupKind.Endpoints, service.namespace, service.name);
  if (endpoints) return fromEndpoints(endpoints, byIp);
  const slices = snapshot.withLabels(
    GroupKind.EndpointSlice,
    { [Label.ServiceName]: service.name },
    service.namespace,
  );
  if (slices.length > 0) return fromSlices(slices, byIp);
  if (!service.selector || Object.keys(service.selector).length === 0) return [];
  const selector = service.selector;
  return namespaceWorkloads
    .filter((w) => labelsMatch(w.labels, selector))
    .map((workload) => ({
      ip: workload.ip,
      workload,
      portFor: (sp: ServicePort) =>
        typeof sp.targetPort === 'number'
          ? sp.targetPort
          : (workload.containerPorts.get(sp.targetPort) ?? sp.port),
    }));
}

type EndpointPorts = { name?: string; port?: number }[];

function endpointPortResolver(ports: EndpointPorts): (sp: ServicePort) => number {
  return (sp) => {
    const byName = ports.find((p) => (p.name ?? '') === sp.name);
    if (byName?.port) return byName.port;
    if (ports.length === 1 && ports[0]?.port) return ports[0].port;
    return typeof sp.targetPort === 'number' ? sp.targetPort : sp.port;
  };
}

function fromEndpoints(endpoints: KubeObject, byIp: ReadonlyMap<string, Workload>): ServiceEndpoint[] {
  const subsets = (endpoints['subsets'] ?? []) as { addresses?: { ip: string }[]; ports?: EndpointPorts }[];
  const out: ServiceEndpoint[] = [];
  for (const subset of subsets) {
    const portFor = endpointPortResolver(subset.ports ?? []);
    for (const address of subset.addresses ?? []) out.push(endpoint(address.ip, byIp, portFor));
  }
  return out.sort((a, b) => compareStrings(a.ip, b.ip));
}

function fromSlices(slices: readonly KubeObject[], byIp: ReadonlyMap<string, Workload>): ServiceEndpoint[] {
  const out: ServiceEndpoint[] = [];
  for (const slice of slices) {
    const portFor = endpointPortResolver((slice['ports'] ?? []) as EndpointPorts);
    for (const e of (slice['endpoints'] ?? []) as {
      addresses?: string[];
      conditions?: { ready?: boolean };
    }[]) {
      if (e.conditions?.ready === false) continue;
      for (const ip of e.addresses ?? []) out.push(endpoint(ip, byIp, portFor));
    }
  }
  return out.sort((a, b) => compareStrings(a.ip, b.ip));
}

function endpoint(
  ip: string,
  byIp: ReadonlyMap<string, Workload>,
  portFor: (sp: ServicePort) => number,
): ServiceEndpoint {
  const workload = byIp.get(ip);
  return workload ? { ip, workload, portFor } : { ip, portFor };
}

/**
 * The namespaces an `exportTo` list exports to: `['*']` for every namespace (an empty list, or one with
 * `*`), else the names, `.` read as the object's own namespace and `~` (no one) left out.
 */
export function exportedNamespaces(exportTo: readonly string[], ownNamespace: string): string[] {
  if (exportTo.length === 0 || exportTo.includes('*')) return ['*'];
  return exportTo.flatMap((e) => (e === '~' ? [] : [e === '.' ? ownNamespace : e]));
}

/** True when the service is visible from `namespace` under its export scope (`*`, `.`, `~`, or names). */
export function isExportedTo(exportTo: readonly string[], ownNamespace: string, namespace: string): boolean {
  if (exportTo.length === 0 || exportTo.includes('*')) return true;
  if (exportTo.includes('~')) return false;
  return exportTo.some((e) => (e === '.' ? ownNamespace === namespace : e === namespace));
}
