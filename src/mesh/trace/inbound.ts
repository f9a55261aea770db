/**
 * The inbound side of a sidecar: the listener a connection lands on, the Service and port it was for, and
 * the authorization the proxy applies before the application answers (docs/semantics.md, "Sidecar inbound").
 */
import { MeshMemo, MeshOnce } from '../memo.ts';
import type { AuthzDecision } from '../authorization.ts';
import { MtlsMode } from '../security.ts';
import type { MeshService } from '../services.ts';
import { serverReport } from '../telemetry.ts';
import { type Connection, type TraceOutcome, Tracer, answered } from './tracer.ts';
import { type Workload } from '../workloads.ts';
import type { KubeObject } from '../../model/object.ts';
import type { Mesh } from '../compiled.ts';
import { principalOf } from '../../model/identity.ts';
import { specIfKind } from '../../model/specs.ts';
import { selectSidecar } from '../sidecar-outbound.ts';
import { authenticateJwt } from '../jwt.ts';
import { capturesInbound } from '../capture.ts';
import { requestWith } from '../http-match.ts';

/**
 * Whether an HTTP proxy (sidecar, gateway, waypoint) sent the connection. When the server side resets it,
 * such a proxy answers its client with a 503; a client with no proxy, or behind ztunnel (L4), sees the reset.
 */
export function sentByHttpProxy(t: Tracer, conn: Connection): boolean {
  return conn.senderHop >= 0 && t.at(conn.senderHop).kind !== 'ztunnel';
}

/** Step: the server sidecar's inbound path — PeerAuthentication, authorization, the destination report. */
export function sidecarInbound(t: Tracer, w: Workload, conn: Connection): TraceOutcome {
  // ztunnel's HBONE ends at the sidecar's own port whatever the application port is.
  const hbone = conn.mtls && conn.senderHop >= 0 && t.at(conn.senderHop).kind === 'ztunnel';
  if (!hbone && !capturesInbound(w, conn.port)) return uncaptured(t, w, conn);
  const hop = t.hop('sidecar', w, 'inbound', 'virtualInbound', conn.mtls);
  t.at(hop).cluster = `inbound|${conn.port}||`;
  const { peerAuth, service, cluster, policies } = inboundPort(t.mesh, w, conn.port);
  t.at(hop).tls =
    `${conn.mtls ? 'mTLS' : 'plaintext'}; PeerAuthentication ${peerAuth.mode}${peerAuth.policy ? ` (${peerAuth.policy})` : ' (default)'}`;
  if (peerAuth.mode === MtlsMode.Strict && !conn.mtls) {
    t.at(hop).decision = 'deny';
    t.at(hop).notes.push('STRICT: no filter chain accepts plaintext; the connection is reset');
    const reason = `${w.namespace}/${w.name} requires mTLS (STRICT) and the request came in plaintext`;
    if (sentByHttpProxy(t, conn)) return t.localReply(conn.senderHop, 503, 'UC', reason);
    return t.localReply(hop, 0, '-', `connection reset: ${reason}`);
  }
  if (peerAuth.mode === MtlsMode.Disable && conn.mtls) {
    t.at(hop).decision = 'deny';
    return t.localReply(
      conn.senderHop,
      503,
      'UF',
      `${w.namespace}/${w.name} has mTLS disabled on port ${conn.port}; the mTLS handshake fails`,
    );
  }
  const jwt = authenticate(t, hop, t.mesh.requestAuthentication.forWorkload(w));
  if (jwt.rejected !== undefined)
    return t.localReply(hop, 401, '-', `Jwt verification fails at ${w.namespace}/${w.name}: ${jwt.rejected}`);
  const decision = authorize(t, hop, w, conn, policies, jwt.principal);
  if (!cluster) t.at(hop).cluster = t.mesh.behaviour.inboundPassthroughCluster;
  t.reports.push(serverReport(t.mesh, { proxy: w, peer: conn.sender, mtls: conn.mtls, service, hop }));
  if (!decision.allowed)
    return t.localReply(hop, 403, '-', `RBAC: access denied at ${w.namespace}/${w.name}: ${decision.reason}`);
  return answered(`${w.namespace}/${w.name}`, ` on port ${conn.port}`);
}

/**
 * A connection to a port the pod does not redirect to its sidecar (docs/semantics.md, Sidecar traffic
 * capture): the application takes it as it arrives, with no mTLS, authorization or report. A client
 * sidecar still sends Istio mTLS to a pod labelled for it, which the application cannot terminate.
 */
function uncaptured(t: Tracer, w: Workload, conn: Connection): TraceOutcome {
  const why = `${w.namespace}/${w.name} does not redirect port ${conn.port} to its sidecar (traffic.sidecar.istio.io annotations)`;
  if (conn.mtls)
    return t.localReply(
      conn.senderHop,
      503,
      'UF',
      `${why}: the application gets the client's Istio mTLS handshake, which fails`,
    );
  return answered(`${w.namespace}/${w.name}`, ` on port ${conn.port}, not through its sidecar: ${why}`);
}

export function authorize(
  t: Tracer,
  hop: number,
  w: Workload,
  conn: Connection,
  policies: readonly KubeObject[],
  requestPrincipal: string | undefined,
): AuthzDecision {
  if (policies.length === 0) {
    t.at(hop).decision = 'allow';
    return NoPolicy;
  }
  const decision = t.mesh.authorization.evaluate(policies, {
    principal: conn.mtls && conn.sender ? principalOf(conn.sender, t.mesh.config.trustDomain) : undefined,
    sourceIp: conn.sender?.ip ?? '198.51.100.7',
    requestPrincipal,
    host: t.request.authority,
    method: t.request.method,
    path: t.request.path,
    port: conn.port,
    headers: t.request.headers,
    destinationIp: conn.ip,
  });
  t.at(hop).decision = decision.decision;
  if (decision.policy) t.at(hop).policy = decision.policy;
  t.at(hop).notes.push(`authorization: ${decision.reason}`);
  for (const c of decision.custom ?? [])
    t.at(hop).notes.push(`CUSTOM ${c}: decided by the external provider (assumed to allow)`);
  return decision;
}

/**
 * Step: a proxy's JWT filter, before its authorization (docs/semantics.md, Request authentication). A
 * refused token is said on the hop (the caller answers 401); a verified one gives the request principal,
 * and the request goes on with the headers the filter wrote.
 */
export function authenticate(
  t: Tracer,
  hop: number,
  policies: readonly KubeObject[],
): { principal: string | undefined; rejected?: string } {
  if (policies.length === 0) return { principal: undefined };
  const outcome = authenticateJwt(policies, t.request);
  t.at(hop).notes.push(...outcome.notes);
  if (outcome.headers !== t.request.headers) t.request = requestWith(t.request, { headers: outcome.headers });
  if (outcome.rejected === undefined) return { principal: outcome.principal };
  t.at(hop).decision = 'deny';
  return { principal: undefined, rejected: outcome.rejected };
}

export const NoPolicy: AuthzDecision = { allowed: true, decision: 'allow', reason: 'no policy applies' };

/**
 * What a workload's inbound side has on one of its ports: the mTLS mode, the service it reports and (for a
 * sidecar) its policies. Server sidecars read it per hop; destination ztunnels read it once per verdict.
 */
interface InboundPort {
  port: number;
  peerAuth: { mode: MtlsMode; policy?: string };
  service: MeshService | undefined;
  /**
   * The port has an inbound cluster of its own (`inbound|PORT||`): a Service's port that reaches it, or,
   * when a Sidecar resource lists `ingress` ports, one of those alone (docs/semantics.md, Sidecar inbound).
   * Other ports go to the passthrough cluster.
   */
  cluster: boolean;
  policies: readonly KubeObject[];
}

const inboundPorts = new MeshMemo<Workload, InboundPort[]>('inbound-ports');

/** A workload's inbound ports, worked out once per mesh and kept in one list per workload (one lookup per hop). */
export function inboundPort(mesh: Mesh, w: Workload, port: number): InboundPort {
  const ports = inboundPorts.get(mesh, w, () => []);
  for (const p of ports) if (p.port === port) return p;
  const service = inboundService(mesh, w, port);
  const ingress = specIfKind(selectSidecar(mesh, w), 'networking.istio.io/Sidecar').ingress ?? [];
  const entry: InboundPort = {
    port,
    peerAuth: mesh.security.peerAuthenticationMode(w, port),
    service,
    cluster: ingress.length > 0 ? ingress.some((i) => i.port?.number === port) : service !== undefined,
    policies: mesh.authorization.forWorkload(w),
  };
  ports.push(entry);
  return entry;
}

const NoEntries: readonly never[] = [];
const inboundServices = new MeshOnce<Map<Workload, { service: MeshService; ports: Set<number> }[]>>(
  'inbound-services',
);

/** The service an inbound cluster reports: the first Service (by name) with this pod as endpoint on this port. */
function inboundService(mesh: Mesh, w: Workload, port: number): MeshService | undefined {
  const index = inboundServices.get(mesh, () => {
    const byWorkload = new Map<Workload, { service: MeshService; ports: Set<number> }[]>();
    for (const s of mesh.services) {
      for (const e of s.endpoints) {
        if (!e.workload) continue;
        const entries = byWorkload.get(e.workload) ?? [];
        entries.push({ service: s, ports: new Set(s.ports.map((p) => e.portFor(p))) });
        byWorkload.set(e.workload, entries);
      }
    }
    return byWorkload;
  });
  for (const entry of index.get(w) ?? NoEntries)
    if (entry.service.namespace === w.namespace && entry.ports.has(port)) return entry.service;
  return undefined;
}
