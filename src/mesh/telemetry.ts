/**
 * The metric label sets proxies report (docs/semantics.md, Telemetry; V1–V5): client
 * sidecars and gateways report `source`, server sidecars `destination`; `destination_service` from the
 * upstream cluster (Host-header fallback on sidecar outbound only), principals only with mTLS.
 */
import { Label } from '../model/vocabulary.ts';
import type { MeshService } from './services.ts';
import type { Workload } from './workloads.ts';
import type { TelemetryRecord } from '../model/trace-result.ts';
import type { Mesh } from './compiled.ts';
import { spiffeOf } from '../model/identity.ts';

/** What the upstream cluster of a client-side report was. */
export type ReportedCluster =
  | { kind: 'service'; service: MeshService; host: string }
  | { kind: 'passthrough' }
  | { kind: 'blackhole' }
  /** No route or no cluster: nothing but the Host header (where fallback is on). */
  | { kind: 'none' };

/** A report whose response code is filled in once the trace knows it. */
export interface PendingReport {
  hop: number;
  build(code: number, flags: string): TelemetryRecord[];
}

const unknown = 'unknown';

/** The standard label set, every key present in Istio's order, so every record has the same shape. */
type LabelSet = {
  reporter: string;
  source_workload: string;
  source_workload_namespace: string;
  source_principal: string;
  source_app: string;
  source_version: string;
  source_canonical_service: string;
  source_canonical_revision: string;
  source_cluster: string;
  destination_workload: string;
  destination_workload_namespace: string;
  destination_principal: string;
  destination_app: string;
  destination_version: string;
  destination_service: string;
  destination_service_name: string;
  destination_service_namespace: string;
  destination_canonical_service: string;
  destination_canonical_revision: string;
  destination_cluster: string;
  request_protocol: string;
  response_code: string;
  grpc_response_status: string;
  response_flags: string;
  connection_security_policy: string;
};

/** Builds a label set from the source and destination workloads as known to the reporter. */
function labelSet(
  reporter: string,
  source: Workload | undefined,
  sourcePrincipal: string,
  destination: Workload | undefined,
  destinationPrincipal: string,
  service: { host: string; name: string; namespace: string },
  tcp: boolean,
  security: string,
): LabelSet {
  return {
    reporter,
    source_workload: source ? source.name : unknown,
    source_workload_namespace: source ? source.namespace : unknown,
    source_principal: sourcePrincipal,
    source_app: source ? (source.labels[Label.App] ?? unknown) : unknown,
    source_version: source ? (source.labels[Label.Version] ?? unknown) : unknown,
    source_canonical_service: source ? source.canonicalService : unknown,
    source_canonical_revision: source ? source.canonicalRevision : 'latest',
    source_cluster: source ? 'Kubernetes' : unknown,
    destination_workload: destination ? destination.name : unknown,
    destination_workload_namespace: destination ? destination.namespace : unknown,
    destination_principal: destinationPrincipal,
    destination_app: destination ? (destination.labels[Label.App] ?? unknown) : unknown,
    destination_version: destination ? (destination.labels[Label.Version] ?? unknown) : unknown,
    destination_service: service.host,
    destination_service_name: service.name,
    destination_service_namespace: service.namespace,
    destination_canonical_service: destination ? destination.canonicalService : unknown,
    destination_canonical_revision: destination ? destination.canonicalRevision : 'latest',
    destination_cluster: destination ? 'Kubernetes' : unknown,
    request_protocol: tcp ? 'tcp' : 'http',
    response_code: '',
    grpc_response_status: '',
    response_flags: '-',
    connection_security_policy: security,
  };
}

/** Completes a label set with the response and turns it into records (`istio_requests_total`, or the TCP pair). */
function records(
  proxy: Workload,
  reporter: TelemetryRecord['reporter'],
  labels: LabelSet,
  tcp: boolean,
  code: number,
  flags: string,
): TelemetryRecord[] {
  const name = `${proxy.namespace}/${proxy.name}`;
  labels.response_flags = flags;
  if (!tcp) {
    labels.response_code = String(code);
    return [
      {
        metric: 'istio_requests_total',
        reporter,
        proxy: name,
        labels: labels,
      },
    ];
  }
  return tcpRecords(name, reporter, labels, flags, flags);
}

/** The labels of a TCP metric: the label set without the HTTP response labels, with these flags. */
type TcpLabelSet = Omit<LabelSet, 'response_code' | 'grpc_response_status'>;

/** Copies a label set without its HTTP response labels (one object literal: every TCP record has one shape). */
function tcpLabels(l: LabelSet, flags: string): TcpLabelSet {
  return {
    reporter: l.reporter,
    source_workload: l.source_workload,
    source_workload_namespace: l.source_workload_namespace,
    source_principal: l.source_principal,
    source_app: l.source_app,
    source_version: l.source_version,
    source_canonical_service: l.source_canonical_service,
    source_canonical_revision: l.source_canonical_revision,
    source_cluster: l.source_cluster,
    destination_workload: l.destination_workload,
    destination_workload_namespace: l.destination_workload_namespace,
    destination_principal: l.destination_principal,
    destination_app: l.destination_app,
    destination_version: l.destination_version,
    destination_service: l.destination_service,
    destination_service_name: l.destination_service_name,
    destination_service_namespace: l.destination_service_namespace,
    destination_canonical_service: l.destination_canonical_service,
    destination_canonical_revision: l.destination_canonical_revision,
    destination_cluster: l.destination_cluster,
    request_protocol: l.request_protocol,
    response_flags: flags,
    connection_security_policy: l.connection_security_policy,
  };
}

/** The `istio_tcp_connections_opened_total` and `_closed_total` pair; TCP metrics carry no HTTP response labels. */
function tcpRecords(
  proxy: string,
  reporter: TelemetryRecord['reporter'],
  labels: LabelSet,
  openedFlags: string,
  closedFlags: string,
): TelemetryRecord[] {
  return [
    {
      metric: 'istio_tcp_connections_opened_total',
      reporter,
      proxy,
      labels: tcpLabels(labels, openedFlags),
    },
    {
      metric: 'istio_tcp_connections_closed_total',
      reporter,
      proxy,
      labels: tcpLabels(labels, closedFlags),
    },
  ];
}

/** The report of a client sidecar (Host fallback on) or a gateway (fallback off): `reporter="source"`. */
export function clientReport(
  mesh: Mesh,
  options: {
    proxy: Workload;
    hostFallback: boolean;
    authority: string;
    cluster: ReportedCluster;
    peer?: Workload | undefined;
    mtls: boolean;
    hop: number;
    tcp?: boolean;
  },
): PendingReport {
  const { proxy, cluster, peer, mtls } = options;
  const fallback = options.hostFallback ? options.authority : unknown;
  let host = fallback;
  let name = fallback;
  let namespace: string | undefined;
  if (cluster.kind === 'passthrough') name = 'PassthroughCluster';
  else if (cluster.kind === 'blackhole') name = 'BlackHoleCluster';
  else if (cluster.kind === 'service') {
    host = cluster.host;
    name = cluster.service.name;
    if (mesh.behaviour.clientServiceNamespaceFromCluster) namespace = cluster.service.namespace;
  }
  const trustDomain = mesh.config.trustDomain;
  let principal = peer && mtls ? spiffeOf(peer, trustDomain) : unknown;
  if (
    principal === unknown &&
    peer &&
    peer.proxy !== 'none' &&
    mesh.behaviour.clientPrincipalFromPeerIdentity
  )
    principal = spiffeOf(peer, trustDomain);
  const tcp = options.tcp === true;
  const service = { host, name, namespace: namespace ?? peer?.namespace ?? unknown };
  const labels = labelSet(
    'source',
    proxy,
    mtls ? spiffeOf(proxy, trustDomain) : unknown,
    peer,
    principal,
    service,
    tcp,
    unknown,
  );
  return { hop: options.hop, build: (code, flags) => records(proxy, 'source', labels, tcp, code, flags) };
}

/** The report of a server sidecar: `reporter="destination"`, its own service and identity. */
export function serverReport(
  mesh: Mesh,
  options: {
    proxy: Workload;
    peer?: Workload | undefined;
    mtls: boolean;
    service?: MeshService | undefined;
    hop: number;
    tcp?: boolean;
  },
): PendingReport {
  const { proxy, peer, mtls, service } = options;
  const trustDomain = mesh.config.trustDomain;
  // Peer metadata arrives through the exchange only when the client is an Istio proxy.
  const peerKnown = peer !== undefined && peer.proxy !== 'none' && peer.proxy !== 'ambient';
  const tcp = options.tcp === true;
  const own = {
    host: service?.hostname ?? proxy.canonicalService,
    // A port no Service covers is served by the inbound passthrough cluster, which carries no service metadata.
    name: service?.name ?? mesh.behaviour.inboundPassthroughCluster,
    namespace: proxy.namespace,
  };
  const labels = labelSet(
    'destination',
    peerKnown ? peer : undefined,
    peer && mtls ? spiffeOf(peer, trustDomain) : unknown,
    proxy,
    mtls ? spiffeOf(proxy, trustDomain) : unknown,
    own,
    tcp,
    mtls ? 'mutual_tls' : 'none',
  );
  return {
    hop: options.hop,
    build: (code, flags) => records(proxy, 'destination', labels, tcp, code, flags),
  };
}

/** The name under which ztunnel (a node proxy, not a workload's) reports. */
const ZtunnelProxy = 'istio-system/ztunnel';

/**
 * A ztunnel's TCP records (ambient mode reports no HTTP metrics at ztunnel): `source` at the client's
 * ztunnel, `destination` at the server's; the flags are ztunnel's own (`DENY`, `CONNECT`, or `-`).
 */
export function ztunnelReport(
  mesh: Mesh,
  options: {
    reporter: 'source' | 'destination';
    source: Workload | undefined;
    destination: Workload | undefined;
    service: MeshService | undefined;
    mtls: boolean;
    hop: number;
    flags: string;
  },
): PendingReport {
  const trustDomain = mesh.config.trustDomain;
  const { source, destination, service } = options;
  const labels = labelSet(
    options.reporter,
    source,
    source && options.mtls ? spiffeOf(source, trustDomain) : unknown,
    destination,
    destination && options.mtls ? spiffeOf(destination, trustDomain) : unknown,
    {
      host: service?.hostname ?? unknown,
      name: service?.name ?? unknown,
      namespace: service?.namespace ?? destination?.namespace ?? unknown,
    },
    true,
    options.mtls ? 'mutual_tls' : unknown,
  );
  return {
    hop: options.hop,
    // The opened counter carries no flags; failures show on the closed counter.
    build: () => tcpRecords(ZtunnelProxy, options.reporter, labels, '-', options.flags),
  };
}

/**
 * A waypoint's `istio_requests_total` (`reporter="waypoint"` from 1.22, `destination` before, V1): the client
 * as source; the service from the inbound-vip cluster; the destination workload and principal from the
 * upstream endpoint from 1.22 (the waypoint's own before, V3); the service namespace the upstream service's
 * from 1.25 (the waypoint's own before, V2).
 */
export function waypointReport(
  mesh: Mesh,
  options: {
    waypoint: Workload;
    client: Workload | undefined;
    service: MeshService;
    endpoint: Workload | undefined;
    hop: number;
  },
): PendingReport {
  const { waypoint, client, service, endpoint } = options;
  const trustDomain = mesh.config.trustDomain;
  const behaviour = mesh.behaviour;
  const destination = behaviour.waypointDestinationFromEndpoint ? endpoint : waypoint;
  const reporter = behaviour.waypointReporter;
  const labels = labelSet(
    reporter,
    client,
    client ? spiffeOf(client, trustDomain) : unknown,
    destination,
    destination ? spiffeOf(destination, trustDomain) : unknown,
    {
      host: service.hostname,
      name: service.name,
      namespace: behaviour.waypointServiceNamespaceFromCluster ? service.namespace : waypoint.namespace,
    },
    false,
    'mutual_tls',
  );
  return {
    hop: options.hop,
    build: (code, flags) => records(waypoint, reporter, labels, false, code, flags),
  };
}
