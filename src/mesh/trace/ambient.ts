/**
 * Ambient mode (docs/semantics.md, "ztunnel" and "Waypoints"): ztunnel's outbound capture and inbound
 * authorization (L4 only), the waypoint a service uses and the L7 routes and policies it applies, and the
 * per-mesh index of which service has which waypoint, policies and routes (built once per mesh).
 */
import { MeshOnce } from '../memo.ts';
import type { Hop } from '../../model/trace-result.ts';
import {
  type L4Decision,
  type Waypoint,
  ingressUsesWaypoint,
  waypointForService,
  waypointForWorkload,
  ztunnelAuthorize,
} from '../ambient.ts';
import { resolveHost } from '../dns.ts';
import type { MatchContext } from '../http-match.ts';
import { MtlsMode } from '../security.ts';
import type { MeshService } from '../services.ts';
import { clientReport, waypointReport, ztunnelReport } from '../telemetry.ts';
import { NoPolicy, authenticate, inboundPort, sentByHttpProxy } from './inbound.ts';
import { firstRoute, withoutSourceLabels } from './route-match.ts';
import {
  type Connection,
  MeshOnly,
  NoLabels,
  type TraceOutcome,
  Tracer,
  answered,
  connection,
  forwardReport,
} from './tracer.ts';
import { type HttpRule, Mesh as MeshGateway, type ResolvedVirtualService } from '../virtual-services.ts';
import { type Workload } from '../workloads.ts';
import { addTo } from '../../model/multimap.ts';
import type { KubeObject } from '../../model/object.ts';
import type { Mesh } from '../compiled.ts';
import { principalOf } from '../../model/identity.ts';

/**
 * An ambient endpoint reached from a sidecar, gateway or waypoint (docs/semantics.md, Sidecars and ambient pods together): HBONE straight to the pod, or, for an
 * ingress gateway whose service opts in with `istio.io/ingress-use-waypoint`, to the service's waypoint.
 * Sidecars never use the destination's waypoint: the hop says so.
 */
export function toAmbientEndpoint(
  t: Tracer,
  proxy: Workload,
  hop: number,
  service: MeshService,
  port: number,
  endpoint: { ip: string; workload: Workload },
  endpointPort: number,
): TraceOutcome | undefined {
  const waypoint = ambientOf(t.mesh).service(service).waypoint;
  if (waypoint && proxy.proxy === 'gateway' && ingressUsesWaypoint(t.mesh.snapshot, service)) {
    const h = t.at(hop);
    h.mtls = true;
    h.tls = 'HBONE to the waypoint (istio.io/ingress-use-waypoint)';
    h.upstream = `${waypoint.workload.ip}:15008 (${waypoint.namespace}/${waypoint.name})`;
    t.reports.push(
      clientReport(t.mesh, {
        proxy,
        hostFallback: false,
        authority: t.request.authority,
        cluster: { kind: 'service', service, host: service.hostname },
        peer: waypoint.workload,
        mtls: true,
        hop,
      }),
    );
    return waypointHop(t, waypoint, service, port, proxy);
  }
  if (waypoint && proxy.proxy !== 'waypoint')
    t.at(hop).notes.push(
      `HBONE straight to the pod: ${proxy.proxy === 'gateway' ? 'the gateway' : 'a sidecar'} skips waypoint ${waypoint.namespace}/${waypoint.name}, so its L7 policies do not apply`,
    );
  const h = t.at(hop);
  h.mtls = true;
  h.tls = 'HBONE to the ambient pod';
  h.upstream = `${endpoint.ip}:${endpointPort} (${endpoint.workload.namespace}/${endpoint.workload.name})`;
  t.reports.push(
    forwardReport(t, proxy, hop, service, endpoint.workload, {
      hostFallback: proxy.proxy === 'sidecar',
      cluster: { kind: 'service', service, host: service.hostname },
      mtls: true,
      tcp: false,
    }),
  );
  return t.walks.deliver(t, connection(proxy, hop, true, endpoint.ip, endpointPort, endpoint.workload));
}

/** The ztunnel every ambient pod's traffic passes: one per node, reported as `istio-system/ztunnel`. */
function findZtunnel(mesh: Mesh): Workload {
  const found = mesh.workloads.find((w) => w.proxy === 'ztunnel');
  if (found) return { ...found, name: 'ztunnel', namespace: found.namespace };
  return {
    namespace: 'istio-system',
    name: 'ztunnel',
    podName: 'ztunnel',
    labels: {},
    annotations: {},
    serviceAccount: 'ztunnel',
    ip: '',
    ipAssigned: true,
    proxy: 'ztunnel',
    tlsModeIstio: false,
    acceptsHbone: false,
    canonicalService: 'ztunnel',
    canonicalRevision: 'latest',
    containerPorts: new Map(),
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ztunnel' } },
  };
}

/**
 * Step: the client's ztunnel (docs/semantics.md, ztunnel). A service VIP whose service uses a waypoint → HBONE to the waypoint;
 * otherwise an endpoint of the service (or the addressed pod): HBONE to an ambient pod, plaintext to
 * anything that can't tunnel. ztunnel never rewrites or routes by Host.
 */
export function ztunnelOutbound(t: Tracer, client: Workload, host: string, port: number): TraceOutcome {
  const resolution = resolveHost(t.mesh, host, client.namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${client.namespace} (no such Service)`);
  const hop = t.hop('ztunnel', ambientOf(t.mesh).ztunnel, 'outbound', 'outbound capture (15001)');
  t.at(hop).notes.push(`for ${client.namespace}/${client.name}`);
  // A name resolves to its Service's VIP (no second lookup); a headless name or an IP goes by address.
  const service =
    resolution.kind === 'service' && resolution.service.vip === resolution.ip
      ? resolution.service
      : t.mesh.serviceByVip.get(resolution.ip);
  const waypoint = service ? ambientOf(t.mesh).service(service).waypoint : undefined;
  if (service && waypoint) {
    towardWaypoint(t.at(hop), waypoint);
    t.reports.push(
      ztunnelReport(t.mesh, {
        reporter: 'source',
        source: client,
        destination: waypoint.workload,
        service,
        mtls: true,
        hop,
        flags: '-',
      }),
    );
    return waypointHop(t, waypoint, service, port, client);
  }
  if (!service) {
    const pod = t.mesh.workloadByIp.get(resolution.ip);
    const forPod = pod?.proxy === 'ambient' ? ambientOf(t.mesh).workloadWaypoint(pod) : undefined;
    if (pod && forPod) return toWorkloadWaypoint(t, hop, client, forPod, pod, port);
  }
  const servicePort = service?.ports.find((p) => p.port === port);
  const endpoint = service ? service.endpoints[0] : undefined;
  if (service && (!servicePort || !endpoint))
    return t.localReply(hop, 0, '-', `no endpoint behind ${service.hostname}:${port} (connection refused)`);
  const ip = endpoint ? endpoint.ip : resolution.ip;
  const targetPort = endpoint && servicePort ? endpoint.portFor(servicePort) : port;
  const workload = endpoint ? endpoint.workload : t.mesh.workloadByIp.get(ip);
  const hbone =
    workload?.proxy === 'ambient' || workload?.proxy === 'waypoint' || workload?.acceptsHbone === true;
  const h = t.at(hop);
  h.route = hbone ? 'hbone' : 'passthrough';
  h.upstream = `${ip}:${targetPort}${workload ? ` (${workload.namespace}/${workload.name})` : ''}`;
  h.mtls = hbone;
  h.tls = hbone ? 'HBONE' : 'plaintext (the destination cannot tunnel)';
  t.reports.push(
    ztunnelReport(t.mesh, {
      reporter: 'source',
      source: client,
      destination: workload,
      service,
      mtls: hbone,
      hop,
      flags: '-',
    }),
  );
  return t.walks.deliver(t, connection(client, hop, hbone, ip, targetPort, workload));
}

/**
 * Step: a waypoint (docs/semantics.md, Waypoints): L7 authorization from policies whose targetRefs name it, the Service, or the
 * waypoint GatewayClass (root namespace); routes from mesh VirtualServices and HTTPRoutes of the service's
 * or the waypoint's namespace, else the default route to `inbound-vip|<port>|http|<service>`; then HBONE
 * to the endpoint, whose ztunnel sees the waypoint's identity.
 */
function waypointHop(
  t: Tracer,
  waypoint: Waypoint,
  service: MeshService,
  port: number,
  client: Workload | undefined,
): TraceOutcome {
  const w = waypoint.workload;
  t.waypointClient = client;
  // HBONE ends at connect_terminate, which hands the tunnel's payload to the internal listener; its filter
  // chain for the service's address and port is inbound-vip|PORT|http|HOST (docs/semantics.md, Waypoints).
  const hop = t.hop('waypoint', w, 'inbound', 'main_internal', true);
  t.at(hop).tls = 'HBONE (mTLS)';
  t.at(hop).notes.push(
    `filter chain inbound-vip|${port}|http|${service.hostname} (${service.vip ?? service.hostname}:${port})`,
  );
  const jwt = authenticateAtWaypoint(t, hop, waypoint, service);
  if ('refused' in jwt) return jwt.refused;
  const policies = ambientOf(t.mesh).policies(service, waypoint);
  const decision = authorizeAtWaypoint(t, hop, policies, client, port, service.vip ?? '', jwt.principal);
  const servicePort = service.ports.find((p) => p.port === port);
  const endpoint = service.endpoints[0];
  const report = (peer: Workload | undefined) =>
    t.reports.push(waypointReport(t.mesh, { waypoint: w, client, service, endpoint: peer, hop }));
  if (!decision.allowed) {
    report(undefined);
    return t.localReply(
      hop,
      403,
      '-',
      `RBAC: access denied at waypoint ${waypoint.namespace}/${waypoint.name}: ${decision.reason}`,
    );
  }
  const routes = ambientOf(t.mesh).routes(service, waypoint);
  if (routes.length > 0) {
    const context: MatchContext = {
      gateways: MeshOnly,
      port,
      sourceLabels: NoLabels,
      sourceNamespace: client?.namespace ?? '',
    };
    // Waypoints drop matches on sourceLabels: they serve many clients.
    const routed = firstRoute(t, w, hop, routes, context, withoutSourceLabels);
    if (routed) return routed;
    report(undefined);
    return t.localReply(
      hop,
      404,
      'NR',
      `no route of the waypoint for ${service.hostname} matches ${t.request.method} ${t.request.path}`,
    );
  }
  t.at(hop).virtualHost = `inbound|http|${port}`;
  t.at(hop).route = 'default';
  t.at(hop).cluster = `inbound-vip|${port}|http|${service.hostname}`;
  if (!servicePort || !endpoint) {
    report(undefined);
    return t.localReply(hop, 503, 'UH', `no endpoint behind ${service.hostname}:${port}`);
  }
  const endpointPort = endpoint.portFor(servicePort);
  t.at(hop).upstream =
    `${endpoint.ip}:${endpointPort}${endpoint.workload ? ` (${endpoint.workload.namespace}/${endpoint.workload.name})` : ''}`;
  report(endpoint.workload);
  return t.walks.deliver(t, connection(w, hop, true, endpoint.ip, endpointPort, endpoint.workload));
}

/**
 * A waypoint's JWT step, with the RequestAuthentications that target it or the Service addressed (none
 * for requests addressed to a pod): the request principal, or the 401 it answers.
 */
function authenticateAtWaypoint(
  t: Tracer,
  hop: number,
  waypoint: Waypoint,
  service: MeshService | undefined,
): { principal: string | undefined } | { refused: TraceOutcome } {
  const jwt = authenticate(t, hop, t.mesh.requestAuthentication.forWaypoint(waypoint, service));
  if (jwt.rejected === undefined) return { principal: jwt.principal };
  const where = `${waypoint.namespace}/${waypoint.name}`;
  return {
    refused: t.localReply(hop, 401, '-', `Jwt verification fails at waypoint ${where}: ${jwt.rejected}`),
  };
}

/** A waypoint's L7 authorization of the request, written on its hop. */
function authorizeAtWaypoint(
  t: Tracer,
  hop: number,
  policies: readonly KubeObject[],
  client: Workload | undefined,
  port: number,
  destinationIp: string,
  requestPrincipal: string | undefined,
) {
  const decision =
    policies.length === 0
      ? NoPolicy
      : t.mesh.authorization.evaluate(policies, {
          principal: client ? principalOf(client, t.mesh.config.trustDomain) : undefined,
          sourceIp: client?.ip ?? '198.51.100.7',
          requestPrincipal,
          host: t.request.authority,
          method: t.request.method,
          path: t.request.path,
          port,
          headers: t.request.headers,
          destinationIp,
        });
  t.at(hop).decision = decision.decision;
  if (decision.policy) t.at(hop).policy = decision.policy;
  if (policies.length > 0) t.at(hop).notes.push(`authorization: ${decision.reason}`);
  return decision;
}

/** A ztunnel hop that sends over HBONE to a waypoint. */
function towardWaypoint(h: Hop, waypoint: Waypoint): void {
  h.route = 'waypoint';
  h.cluster = `connect_originate (${waypoint.namespace}/${waypoint.name})`;
  h.upstream = `${waypoint.workload.ip}:15008 (${waypoint.namespace}/${waypoint.name})`;
  h.mtls = true;
  h.tls = 'HBONE';
}

/**
 * Steps: ztunnel sends a request addressed to a pod to the pod's workload waypoint, which applies the
 * policies that target it (by Gateway, or the waypoint class from the root namespace; not those of a
 * Service, which was not addressed) and sends it on to the pod over HBONE (docs/semantics.md, Waypoints).
 */
function toWorkloadWaypoint(
  t: Tracer,
  ztunnelHop: number,
  client: Workload,
  waypoint: Waypoint,
  pod: Workload,
  port: number,
): TraceOutcome {
  const h = t.at(ztunnelHop);
  towardWaypoint(h, waypoint);
  h.notes.push(
    `the pod ${pod.namespace}/${pod.name} uses waypoint ${waypoint.namespace}/${waypoint.name} for workload traffic`,
  );
  t.waypointClient = client;
  const hop = t.hop('waypoint', waypoint.workload, 'inbound', `inbound-pod ${pod.ip}:${port}`, true);
  t.at(hop).tls = 'HBONE (mTLS)';
  const jwt = authenticateAtWaypoint(t, hop, waypoint, undefined);
  if ('refused' in jwt) return jwt.refused;
  const policies = ambientOf(t.mesh).workloadPolicies(waypoint);
  const decision = authorizeAtWaypoint(t, hop, policies, client, port, pod.ip, jwt.principal);
  if (!decision.allowed)
    return t.localReply(
      hop,
      403,
      '-',
      `RBAC: access denied at waypoint ${waypoint.namespace}/${waypoint.name}: ${decision.reason}`,
    );
  t.at(hop).route = 'default';
  t.at(hop).cluster = `inbound-pod|${port}|${pod.ip}`;
  t.at(hop).upstream = `${pod.ip}:${port} (${pod.namespace}/${pod.name})`;
  return t.walks.deliver(t, connection(waypoint.workload, hop, true, pod.ip, port, pod));
}

/** What a compiled mesh knows about one service in ambient mode, worked out on first use. */
interface ServiceAmbient {
  waypoint: Waypoint | undefined;
  /** The policies and routes the waypoint applies for the service (filled in when a request first enters it). */
  policies: readonly KubeObject[] | undefined;
  routes: readonly { rule: HttpRule; vs: ResolvedVirtualService }[] | undefined;
}

/** A destination ztunnel's L4 verdict for one sender, port and transport. */
interface InboundVerdict {
  decision: L4Decision;
  service: MeshService | undefined;
}

/** A sender-less connection's key in the inbound verdict cache. */
const NoSender = {};

/**
 * The ambient parts of a compiled mesh a trace asks about again and again: each service's waypoint with its
 * policies and routes, and each destination's L4 verdicts. The mesh never changes, so every answer is kept.
 */
export class AmbientIndex {
  readonly ztunnel: Workload;
  readonly #mesh: Mesh;
  readonly #services = new Map<MeshService, ServiceAmbient>();
  readonly #workloadWaypoints = new Map<Workload, Waypoint | undefined>();
  readonly #workloadPolicies = new Map<Waypoint, readonly KubeObject[]>();
  readonly #inbound = new Map<Workload, Map<object, Map<number, InboundVerdict>>>();
  #routesByHost: ReturnType<typeof meshRoutesByHost> | undefined;

  constructor(mesh: Mesh) {
    this.#mesh = mesh;
    this.ztunnel = findZtunnel(mesh);
  }

  static of(mesh: Mesh): AmbientIndex {
    return ambientIndexes.get(mesh, () => new AmbientIndex(mesh));
  }

  service(service: MeshService): ServiceAmbient {
    let entry = this.#services.get(service);
    if (!entry) {
      const waypoint = waypointForService(this.#mesh.snapshot, this.#mesh.waypoints, service);
      entry = { waypoint, policies: undefined, routes: undefined };
      this.#services.set(service, entry);
    }
    return entry;
  }

  /** Policies the service's waypoint enforces for it: targetRefs to the waypoint, the Service, or (root namespace) the waypoint class. */
  policies(service: MeshService, waypoint: Waypoint): readonly KubeObject[] {
    const entry = this.service(service);
    return (entry.policies ??= this.#mesh.authorization.forWaypoint(waypoint, service));
  }

  /** The workload waypoint of an ambient pod, for requests addressed to the pod (none: ztunnel sends them straight). */
  workloadWaypoint(pod: Workload): Waypoint | undefined {
    if (!this.#workloadWaypoints.has(pod))
      this.#workloadWaypoints.set(pod, waypointForWorkload(this.#mesh.snapshot, this.#mesh.waypoints, pod));
    return this.#workloadWaypoints.get(pod);
  }

  /** Policies a waypoint enforces for requests addressed to pods: targetRefs to the waypoint, or (root namespace) the waypoint class. */
  workloadPolicies(waypoint: Waypoint): readonly KubeObject[] {
    let known = this.#workloadPolicies.get(waypoint);
    if (!known) {
      known = this.#mesh.authorization.forWaypoint(waypoint, undefined);
      this.#workloadPolicies.set(waypoint, known);
    }
    return known;
  }

  /** Mesh routes the service's waypoint applies: from the service's namespace or the waypoint's. */
  routes(
    service: MeshService,
    waypoint: Waypoint,
  ): readonly { rule: HttpRule; vs: ResolvedVirtualService }[] {
    const entry = this.service(service);
    if (entry.routes) return entry.routes;
    this.#routesByHost ??= meshRoutesByHost(this.#mesh);
    return (entry.routes = findWaypointRoutes(this.#routesByHost, waypoint, service));
  }

  /**
   * The verdict of `w`'s ztunnel on a connection: it depends on the destination, the sender (identity and
   * address), the port and whether the connection carries an identity, never on the request.
   */
  inbound(w: Workload, sender: Workload | undefined, port: number, mtls: boolean): InboundVerdict {
    let bySender = this.#inbound.get(w);
    if (!bySender) this.#inbound.set(w, (bySender = new Map()));
    let byPort = bySender.get(sender ?? NoSender);
    if (!byPort) bySender.set(sender ?? NoSender, (byPort = new Map()));
    const key = mtls ? port : -1 - port;
    let verdict = byPort.get(key);
    if (!verdict) {
      const { peerAuth, service } = inboundPort(this.#mesh, w, port);
      verdict = {
        decision: ztunnelVerdict(this.#mesh, w, sender, port, mtls, peerAuth.mode === MtlsMode.Strict),
        service,
      };
      byPort.set(key, verdict);
    }
    return verdict;
  }
}

/** The policies a waypoint applies: those that target it, its class, and the Service addressed (if one was). */
/** Mesh routes a waypoint applies for a service: from its namespace or the waypoint's (routes with sourceLabels are dropped when matching). */
function findWaypointRoutes(
  index: ReturnType<typeof meshRoutesByHost>,
  waypoint: Waypoint,
  service: MeshService,
): { rule: HttpRule; vs: ResolvedVirtualService }[] {
  const wildcard = index.wildcard.filter(([suffix]) => service.hostname.endsWith(suffix)).map(([, vs]) => vs);
  return [...(index.exact.get(service.hostname) ?? []), ...wildcard]
    .filter((vs) => vs.namespace === service.namespace || vs.namespace === waypoint.namespace)
    .flatMap((vs) => vs.http.map((rule) => ({ rule, vs })));
}

/** The mesh-bound VirtualServices (and mesh HTTPRoutes) by exact host, and the wildcard ones by suffix. */
function meshRoutesByHost(mesh: Mesh): {
  exact: Map<string, ResolvedVirtualService[]>;
  wildcard: [string, ResolvedVirtualService][];
} {
  const index = {
    exact: new Map<string, ResolvedVirtualService[]>(),
    wildcard: [] as [string, ResolvedVirtualService][],
  };
  for (const vs of mesh.virtualServices) {
    if (!vs.gateways.includes(MeshGateway)) continue;
    for (const host of vs.hosts) {
      if (host.startsWith('*')) index.wildcard.push([host.slice(1), vs]);
      else addTo(index.exact, host, vs);
    }
  }
  return index;
}

/**
 * Step: the destination's ztunnel (docs/semantics.md, ztunnel): STRICT PeerAuthentication refuses a connection without identity;
 * then L4 authorization against the sender's identity (the waypoint's, when one is on the path). A denial
 * resets the connection: the sender's ztunnel or proxy sees no HTTP response from upstream.
 */
export function ztunnelInbound(t: Tracer, w: Workload, conn: Connection): TraceOutcome {
  const hop = t.hop(
    'ztunnel',
    ambientOf(t.mesh).ztunnel,
    'inbound',
    conn.mtls ? 'HBONE (15008)' : 'inbound passthrough',
    conn.mtls,
  );
  t.at(hop).notes.push(`for ${w.namespace}/${w.name}:${conn.port}`);
  const { decision, service } = ambientOf(t.mesh).inbound(w, conn.sender, conn.port, conn.mtls);
  const h = t.at(hop);
  h.decision = decision.allowed ? 'allow' : 'deny';
  h.tls = conn.mtls
    ? `HBONE from ${conn.sender ? `${conn.sender.namespace}/${conn.sender.name}` : 'unknown'}`
    : 'plaintext, no identity';
  if (decision.policy) t.at(hop).policy = decision.policy;
  t.at(hop).notes.push(`L4 authorization: ${decision.reason}`);
  t.reports.push(
    ztunnelReport(t.mesh, {
      reporter: 'destination',
      source: conn.sender,
      destination: w,
      service,
      mtls: conn.mtls,
      hop,
      flags: decision.allowed ? '-' : 'DENY',
    }),
  );
  if (!decision.allowed) {
    if (sentByHttpProxy(t, conn))
      return t.localReply(
        conn.senderHop,
        503,
        'UF',
        `connection refused by ztunnel for ${w.namespace}/${w.name}: ${decision.reason}`,
      );
    return t.localReply(
      hop,
      0,
      'DENY',
      `connection reset by ztunnel for ${w.namespace}/${w.name}: ${decision.reason}`,
    );
  }
  return answered(`${w.namespace}/${w.name}`, ` on port ${conn.port}`);
}

/** A destination ztunnel's L4 authorization of a connection from `sender` (docs/semantics.md, ztunnel); `strict`: PeerAuthentication STRICT on the port. */
function ztunnelVerdict(
  mesh: Mesh,
  w: Workload,
  sender: Workload | undefined,
  port: number,
  mtls: boolean,
  strict: boolean,
): L4Decision {
  return ztunnelAuthorize(
    mesh.authorization.inNamespaces(w.namespace, mesh.config.rootNamespace),
    w,
    {
      principal: mtls && sender ? principalOf(sender, mesh.config.trustDomain) : undefined,
      sourceIp: sender?.ip ?? '198.51.100.7',
      requestPrincipal: undefined,
      host: '',
      method: '',
      path: '',
      port,
      headers: {},
      destinationIp: w.ip,
    },
    strict,
  );
}

const ambientIndexes = new MeshOnce<AmbientIndex>('ambient-index');

/** The mesh's ambient index (built by the first trace that needs it, then kept with the mesh). */
function ambientOf(mesh: Mesh): AmbientIndex {
  return AmbientIndex.of(mesh);
}
