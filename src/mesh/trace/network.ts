/**
 * Step: the CNI's NetworkPolicies on a connection (docs/semantics.md, NetworkPolicy), between the proxy
 * that sends it and whatever receives it. They see the connection as it is on the wire: the sending pod's
 * address (a gateway's or a waypoint's when one sends), and the port at the receiving pod: the original
 * port, or 15008 when ztunnel or a waypoint carries it over HBONE to an ambient pod. A refused connection
 * is dropped: the sender's proxy answers 503 UF, a client without one times out.
 */
import type { Connection, TraceOutcome, Tracer } from './tracer.ts';
import { sentByHttpProxy } from './inbound.ts';
import type { PolicyVerdict } from '../network-policy.ts';

/** ztunnel's HBONE port, where ambient pods receive mesh traffic. */
export const HboneTargetPort = 15008;

/** The port a connection arrives on at its pod. */
function wirePort(conn: Connection): number {
  return conn.workload?.proxy === 'ambient' && conn.mtls ? HboneTargetPort : conn.port;
}

/** The refusal of a connection by a NetworkPolicy, or undefined when the policies let it through. */
export function networkPolicyStep(t: Tracer, conn: Connection): TraceOutcome | undefined {
  const policies = t.mesh.networkPolicies;
  if (policies.empty) return undefined;
  const port = wirePort(conn);
  const sender = conn.sender;
  const target = conn.workload ? `${conn.workload.namespace}/${conn.workload.name}` : conn.ip;
  const checks: [string, PolicyVerdict][] = [];
  if (sender)
    checks.push([
      'egress of the sender',
      policies.egress(sender, { workload: conn.workload, ip: conn.ip }, port),
    ]);
  if (conn.workload)
    checks.push([
      'ingress of the destination',
      policies.ingress({ workload: sender, ip: sender?.ip }, conn.workload, port),
    ]);
  for (const [direction, verdict] of checks) {
    if (!verdict.isolated) continue;
    const hop = conn.senderHop >= 0 ? t.at(conn.senderHop) : undefined;
    if (verdict.allowed) {
      hop?.notes.push(
        `NetworkPolicy ${verdict.by} admits the connection to ${target}:${port} (${direction})`,
      );
      continue;
    }
    const refusing = verdict.by.map((p) => `NetworkPolicy ${p}`).join(', ');
    const reason = `${refusing} refuses the connection to ${target}:${port} (${direction}): it is dropped`;
    if (hop) {
      hop.decision = 'deny';
      hop.policy = refusing;
    }
    if (sentByHttpProxy(t, conn)) return t.localReply(conn.senderHop, 503, 'UF', reason);
    return t.localReply(conn.senderHop, 0, '-', `connection timed out: ${reason}`);
  }
  return undefined;
}
