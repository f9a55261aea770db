/**
 * The metric label sets proxies report (istio-dataplane-semantics.md §3 with corrections S1–S5): client
 * sidecars and gateways report `source`, server sidecars `destination`; `destination_service` from the
 * upstream cluster (Host-header fallback on sidecar outbound only), principals only with mTLS.
 */
import type { Mesh } from './mesh.ts';
import type { MeshService } from './services.ts';
import { spiffeOf } from './security.ts';
import type { Workload } from './workloads.ts';

/** One emitted metric record. */
export interface TelemetryRecord {
  metric: string;
  reporter: 'source' | 'destination' | 'waypoint';
  /** `namespace/workload` of the reporting proxy. */
  proxy: string;
  labels: Record<string, string>;
}

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

function sourceLabels(
  workload: Workload | undefined,
  mtls: boolean,
  mesh: Mesh,
  peerKnown: boolean,
): Record<string, string> {
  const known = workload !== undefined && peerKnown;
  return {
    source_workload: known ? workload.name : unknown,
    source_workload_namespace: known ? workload.namespace : unknown,
    source_principal: workload && mtls ? spiffeOf(workload, mesh.config.trustDomain) : unknown,
    source_app: known ? (workload.labels['app'] ?? unknown) : unknown,
    source_version: known ? (workload.labels['version'] ?? unknown) : unknown,
    source_canonical_service: known ? workload.canonicalService : unknown,
    source_canonical_revision: known ? workload.canonicalRevision : 'latest',
    source_cluster: known ? 'Kubernetes' : unknown,
  };
}

function destinationWorkloadLabels(peer: Workload | undefined): Record<string, string> {
  return {
    destination_workload: peer ? peer.name : unknown,
    destination_workload_namespace: peer ? peer.namespace : unknown,
    destination_app: peer ? (peer.labels['app'] ?? unknown) : unknown,
    destination_version: peer ? (peer.labels['version'] ?? unknown) : unknown,
    destination_canonical_service: peer ? peer.canonicalService : unknown,
    destination_canonical_revision: peer ? peer.canonicalRevision : 'latest',
    destination_cluster: peer ? 'Kubernetes' : unknown,
  };
}

/** The report of a client sidecar (Host fallback on) or a gateway (fallback off): `reporter="source"`. */
export function clientReport(
  mesh: Mesh,
  options: {
    proxy: Workload;
    hostFallback: boolean;
    authority: string;
    cluster: ReportedCluster;
    peer?: Workload;
    mtls: boolean;
    hop: number;
    tcp?: boolean;
  },
): PendingReport {
  const { proxy, cluster, peer, mtls } = options;
  const fallback = options.hostFallback ? options.authority : unknown;
  let service = fallback;
  let serviceName = fallback;
  let serviceNamespace: string | undefined;
  if (cluster.kind === 'passthrough') serviceName = 'PassthroughCluster';
  else if (cluster.kind === 'blackhole') serviceName = 'BlackHoleCluster';
  else if (cluster.kind === 'service') {
    service = cluster.host;
    serviceName = cluster.service.name;
    if (mesh.behaviour.clientServiceNamespaceFromCluster) serviceNamespace = cluster.service.namespace;
  }
  let principal = peer && mtls ? spiffeOf(peer, mesh.config.trustDomain) : unknown;
  if (
    principal === unknown &&
    peer &&
    peer.proxy !== 'none' &&
    mesh.behaviour.clientPrincipalFromPeerIdentity
  )
    principal = spiffeOf(peer, mesh.config.trustDomain);
  const labels: Record<string, string> = {
    reporter: 'source',
    ...sourceLabels(proxy, mtls, mesh, true),
    ...destinationWorkloadLabels(peer),
    destination_principal: principal,
    destination_service: service,
    destination_service_name: serviceName,
    destination_service_namespace: serviceNamespace ?? peer?.namespace ?? unknown,
    request_protocol: options.tcp ? 'tcp' : 'http',
    connection_security_policy: unknown,
  };
  return {
    hop: options.hop,
    build: (code, flags) =>
      options.tcp
        ? tcpRecords(`${proxy.namespace}/${proxy.name}`, 'source', labels, flags)
        : [
            {
              metric: 'istio_requests_total',
              reporter: 'source',
              proxy: `${proxy.namespace}/${proxy.name}`,
              labels: {
                ...labels,
                response_code: String(code),
                grpc_response_status: '',
                response_flags: flags,
              },
            },
          ],
  };
}

/** The report of a server sidecar: `reporter="destination"`, its own service and identity. */
export function serverReport(
  mesh: Mesh,
  options: {
    proxy: Workload;
    peer?: Workload;
    mtls: boolean;
    service?: MeshService;
    hop: number;
    tcp?: boolean;
  },
): PendingReport {
  const { proxy, peer, mtls, service } = options;
  // Peer metadata arrives through the exchange only when the client is an Istio proxy.
  const peerKnown = peer !== undefined && peer.proxy !== 'none' && peer.proxy !== 'ambient';
  const labels: Record<string, string> = {
    reporter: 'destination',
    ...sourceLabels(peer, mtls, mesh, peerKnown),
    ...destinationWorkloadLabels(proxy),
    destination_principal: mtls ? spiffeOf(proxy, mesh.config.trustDomain) : unknown,
    destination_service: service?.hostname ?? proxy.canonicalService,
    destination_service_name: service?.name ?? proxy.canonicalService,
    destination_service_namespace: proxy.namespace,
    request_protocol: options.tcp ? 'tcp' : 'http',
    connection_security_policy: mtls ? 'mutual_tls' : 'none',
  };
  return {
    hop: options.hop,
    build: (code, flags) =>
      options.tcp
        ? tcpRecords(`${proxy.namespace}/${proxy.name}`, 'destination', labels, flags)
        : [
            {
              metric: 'istio_requests_total',
              reporter: 'destination',
              proxy: `${proxy.namespace}/${proxy.name}`,
              labels: {
                ...labels,
                response_code: String(code),
                grpc_response_status: '',
                response_flags: flags,
              },
            },
          ],
  };
}

function tcpRecords(
  proxy: string,
  reporter: 'source' | 'destination',
  labels: Record<string, string>,
  flags: string,
): TelemetryRecord[] {
  return ['istio_tcp_connections_opened_total', 'istio_tcp_connections_closed_total'].map((metric) => ({
    metric,
    reporter,
    proxy,
    labels: { ...labels, response_flags: flags },
  }));
}
