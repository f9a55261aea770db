/**
 * `traceRequest`: follows one HTTP request through the proxies of a compiled mesh, as a chain of named
 * steps per proxy (listener, virtual host, route, cluster, TLS, authorization) in the manner of Istio's own
 * `pilot/pkg/simulation`. Pure: the mesh and the request in, the hops, the response and the metrics out.
 */
import type { HttpRequest } from './http-match.ts';
import { ztunnelInbound, ztunnelOutbound } from './trace/ambient.ts';
import { fromExternal, gateway } from './trace/gateway.ts';
import { sentByHttpProxy, sidecarInbound } from './trace/inbound.ts';
import { networkPolicyStep } from './trace/network.ts';
import { ApiServerClient, type TraceInput, findWorkload, parseUrl } from './trace/request.ts';
import { direct, sidecarOutbound, takeRoute } from './trace/sidecar.ts';
import {
  AmbientUnsupported,
  type Connection,
  MaxHops,
  NoChoices,
  type TraceOutcome,
  Tracer,
  answered,
  type Walks,
} from './trace/tracer.ts';
import type { TelemetryRecord, TraceResult } from '../model/trace-result.ts';
import type { Mesh } from './compiled.ts';

/** The walks' steps into each other (see Walks). */
const walks: Walks = { deliver, takeRoute };

/** Traces one request through the mesh. */
export function traceRequest(mesh: Mesh, input: TraceInput): TraceResult {
  return trace(mesh, input).result;
}

/** A trace and the weighted splits it met (for `traceAllPaths`). */
function trace(
  mesh: Mesh,
  input: TraceInput,
): { result: TraceResult; splits: { options: number; taken: number }[] } {
  const method = (input.method ?? 'GET').toUpperCase();
  const url = parseUrl(input.url);
  const headers: Record<string, string> = {};
  const given = input.headers;
  if (given !== undefined) for (const k of Object.keys(given)) headers[k.toLowerCase()] = given[k] as string;
  const port = url.port ?? (url.scheme === 'https' ? 443 : 80);
  const request: HttpRequest = {
    method,
    scheme: url.scheme,
    authority: headers['host'] ?? url.authority,
    path: url.path,
    query: url.query,
    headers,
  };
  const tracer = new Tracer(mesh, request, walks);
  tracer.choices = input.choices ?? NoChoices;
  const host = url.host;
  let outcome: TraceOutcome;
  if (input.from === 'external') {
    outcome = fromExternal(tracer, host, port, url.scheme === 'https', input.via, input.portForward);
  } else if (input.from === ApiServerClient) {
    outcome = direct(tracer, undefined, host, port);
  } else {
    const client = findWorkload(mesh, input.from);
    if (client.proxy === 'waypoint' || client.proxy === 'ztunnel') tracer.unsupported = AmbientUnsupported;
    outcome =
      client.proxy === 'sidecar'
        ? sidecarOutbound(tracer, client, host, port)
        : client.proxy === 'ambient'
          ? ztunnelOutbound(tracer, client, host, port)
          : direct(tracer, client, host, port);
  }
  const telemetry: TelemetryRecord[] = [];
  for (const r of tracer.reports)
    telemetry.push(...r.build(outcome.code, r.hop === outcome.hop ? outcome.flags : '-'));
  const result: TraceResult = {
    request: { from: input.from, method, url: input.url, headers },
    response: { code: outcome.code, flags: outcome.flags },
    hops: tracer.hops,
    telemetry,
    summary: outcome.summary,
  };
  if (outcome.answeredBy !== undefined) result.answeredBy = outcome.answeredBy;
  if (tracer.unsupported) result.unsupported = tracer.unsupported;
  if (tracer.splits.length > 0) result.share = tracer.splits.reduce((p, s) => p * (s.weight / s.total), 1);
  return { result, splits: tracer.splits };
}

/**
 * Every path a request can take through weighted splits (`--all-paths`): one trace per combination of
 * destinations, each with its share of the traffic, at most `limit` paths.
 */
export function traceAllPaths(mesh: Mesh, input: TraceInput, limit = 64): TraceResult[] {
  const out: TraceResult[] = [];
  const explore = (prefix: number[]): void => {
    if (out.length >= limit) return;
    const { result, splits } = trace(mesh, { ...input, choices: prefix });
    const next = splits[prefix.length];
    if (!next) {
      out.push(result);
      return;
    }
    for (let i = 0; i < next.options; i++) explore([...prefix, i]);
  };
  explore([]);
  return out;
}

/** Step: hand the connection to whatever runs at its address. */
function deliver(t: Tracer, conn: Connection): TraceOutcome {
  if (t.hops.length >= MaxHops)
    return t.localReply(conn.senderHop, 508, 'LOOP', `routing loop: more than ${MaxHops} proxy hops`);
  const refused = networkPolicyStep(t, conn);
  if (refused) return refused;
  const w = conn.workload;
  if (!w) return answered(`${conn.ip}:${conn.port}`, ' (outside the mesh)');
  if (w.proxy === 'ambient') return ztunnelInbound(t, w, conn);
  if (w.proxy === 'waypoint' || w.proxy === 'ztunnel') t.unsupported = AmbientUnsupported;
  if (w.proxy === 'sidecar') return sidecarInbound(t, w, conn);
  if (w.proxy === 'gateway') {
    const proxy = t.mesh.gateways.get(w);
    if (proxy) return gateway(t, proxy, conn);
    // A gateway proxy no Gateway configures has no listeners: the connection is refused.
    const reason = `gateway ${w.namespace}/${w.name} has no Gateway configuration: nothing listens on port ${conn.port}`;
    if (sentByHttpProxy(t, conn)) return t.localReply(conn.senderHop, 503, 'UF', reason);
    return t.localReply(conn.senderHop, 0, '-', `connection refused: ${reason}`);
  }
  if (conn.mtls)
    return t.localReply(conn.senderHop, 503, 'UF', `${w.namespace}/${w.name} has no proxy to terminate mTLS`);
  return answered(`${w.namespace}/${w.name}`, ` (no proxy) on port ${conn.port}`);
}
