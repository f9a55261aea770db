/**
 * `traceRequest`: follows one HTTP request through the proxies of a compiled mesh, as a chain of named
 * steps per proxy (listener, virtual host, route, cluster, TLS, authorization) in the manner of Istio's own
 * `pilot/pkg/simulation`. Pure: the mesh and the request in, the hops, the response and the metrics out.
 */
import { specIfKind } from '../model/specs.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { addTo } from '../model/multimap.ts';
import { targetRefsOf, type AuthzDecision } from './authorization.ts';
import {
  ingressUsesWaypoint,
  waypointForService,
  ztunnelAuthorize,
  type L4Decision,
  type Waypoint,
} from './ambient.ts';
import type { KubeObject } from '../model/object.ts';
import { resolveHost, type Resolution } from './dns.ts';
import { gatewayRouteTable, pickDomain, type GatewayProxy } from './gateways.ts';
import {
  firstMatchingRule,
  matchApplies,
  requestMatches,
  type HttpRequest,
  type MatchContext,
  type MatchedRule,
} from './http-match.ts';
import { serviceForHost, type Mesh } from './mesh.ts';
import { MtlsMode } from './security.ts';
import { isExportedTo, type MeshService } from './services.ts';
import {
  sees,
  hostWithoutPort,
  outboundListener,
  selectVirtualHost,
  sidecarScopeOf,
  type SidecarScope,
} from './sidecar-outbound.ts';
import {
  ztunnelReport,
  waypointReport,
  clientReport,
  serverReport,
  type PendingReport,
  type ReportedCluster,
} from './telemetry.ts';
import {
  Mesh as MeshGateway,
  resolveShortName,
  type HeaderOperations,
  type HttpMatch,
  type HttpRule,
  type ResolvedVirtualService,
} from './virtual-services.ts';
import { principalOf, type Workload } from './workloads.ts';
import { Label, GatewayClass } from '../model/vocabulary.ts';
import type { Hop, TelemetryRecord, TraceResult } from '../model/trace-result.ts';

/** The request to trace. */
export interface TraceInput {
  /** `namespace/workload` or `external`. */
  from: string;
  url: string;
  method?: string;
  /** Extra request headers (any case). */
  headers?: Readonly<Record<string, string>>;
  /** At the n-th weighted split met, take destination `choices[n]` (default: the heaviest). */
  choices?: readonly number[];
  /**
   * For an external client: the ingress gateway to enter through, `namespace/name` of its pods' workload
   * or of its Gateway API Gateway (default: the first gateway of the mesh that serves the host).
   */
  via?: string;
}

/** A request header written `Name: value`, or undefined when no name comes before a colon. */
export function parseHeaderLine(text: string): [name: string, value: string] | undefined {
  const colon = text.indexOf(':');
  return colon > 0 ? [text.slice(0, colon).trim(), text.slice(colon + 1).trim()] : undefined;
}

/** A request the trace cannot start (unknown workload, bad URL, no gateway for an external host). */
export class TraceInputError extends Error {
  override name = 'TraceInputError';
}

interface Outcome {
  code: number;
  flags: string;
  /** The hop that produced the response itself (-1: the application). */
  hop: number;
  summary: string;
  /** The application that answered (`namespace/workload`, or `ip:port` outside the mesh). */
  answeredBy?: string;
}

/** The application answered (the response is its own, not a proxy's): `who` is the workload or `ip:port`. */
function answered(who: string, detail: string): Outcome {
  return { code: 200, flags: '-', hop: -1, summary: `answered by ${who}${detail}`, answeredBy: who };
}

/** An open connection a proxy hands on: who sent it, how, and where it lands. */
interface Connection {
  sender: Workload | undefined;
  senderHop: number;
  mtls: boolean;
  ip: string;
  port: number;
  workload: Workload | undefined;
  /** TLS originated by an external client (https URL). */
  externalTls: boolean;
}

/** A connection, always built with the same shape. */
function connection(
  sender: Workload | undefined,
  senderHop: number,
  mtls: boolean,
  ip: string,
  port: number,
  workload: Workload | undefined,
  externalTls = false,
): Connection {
  return { sender, senderHop, mtls, ip, port, workload, externalTls };
}

const AmbientUnsupported =
  'a waypoint or ztunnel pod was addressed directly (as a client or a destination), which the simulator does not model';

class Tracer {
  readonly hops: Hop[] = [];
  unsupported: string | undefined;
  /** Weighted splits met so far: the options and the index taken at each. */
  readonly splits: { options: number; taken: number; weight: number; total: number }[] = [];
  choices: readonly number[] = [];
  readonly reports: PendingReport[] = [];
  /** The client a waypoint serves, set when the request enters one: the waypoint reports on its behalf. */
  waypointClient: Workload | undefined;
  request: HttpRequest;
  readonly mesh: Mesh;
  #ambient: AmbientIndex | undefined;

  constructor(mesh: Mesh, request: HttpRequest) {
    this.mesh = mesh;
    this.request = request;
  }

  /** Starts a hop; every hop object has the same fields (unset ones undefined, left out of JSON). */
  hop(kind: Hop['kind'], w: Workload, direction: Hop['direction'], listener: string, mtls = false): number {
    this.hops.push({
      kind,
      namespace: w.namespace,
      workload: w.name,
      direction,
      listener,
      routeConfig: undefined,
      virtualHost: undefined,
      virtualService: undefined,
      route: undefined,
      cluster: undefined,
      upstream: undefined,
      authority: this.request.authority,
      path: this.request.path,
      mtls,
      tls: undefined,
      decision: 'none',
      policy: undefined,
      code: undefined,
      flags: undefined,
      split: undefined,
      notes: [],
    });
    return this.hops.length - 1;
  }

  /** The mesh's ambient index (built by the first trace that needs it). */
  get ambient(): AmbientIndex {
    return (this.#ambient ??= AmbientIndex.of(this.mesh));
  }

  at(index: number): Hop {
    return this.hops[index] as Hop;
  }

  /** A sidecar's catch-all took the request: its report names PassthroughCluster or BlackHoleCluster. */
  reportCatchAll(hop: number, proxy: Workload, kind: 'passthrough' | 'blackhole', tcp: boolean): void {
    this.reports.push(
      clientReport(this.mesh, {
        proxy,
        hostFallback: true,
        authority: this.request.authority,
        cluster: { kind },
        mtls: false,
        hop,
        tcp,
      }),
    );
  }

  /** A proxy answers itself before any upstream: its report has no cluster (Host fallback where it applies). */
  replyWithoutUpstream(
    hop: number,
    proxy: Workload,
    hostFallback: boolean,
    code: number,
    flags: string,
    summary: string,
    tcp = false,
  ): Outcome {
    this.reports.push(
      clientReport(this.mesh, {
        proxy,
        hostFallback,
        authority: this.request.authority,
        cluster: { kind: 'none' },
        mtls: false,
        hop,
        tcp,
      }),
    );
    return this.localReply(hop, code, flags, summary);
  }

  localReply(hop: number, code: number, flags: string, summary: string): Outcome {
    if (hop >= 0) {
      this.at(hop).code = code;
      this.at(hop).flags = flags;
    }
    return { code, flags, hop, summary };
  }
}

const MaxHops = 12;

/** Shared constants of the hot path (never changed): no allocation per trace for them. */
const NoChoices: readonly number[] = Object.freeze([]);
const MeshOnly: readonly string[] = Object.freeze([MeshGateway]);
const NoLabels: Readonly<Record<string, string>> = Object.freeze({});

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
  const tracer = new Tracer(mesh, request);
  tracer.choices = input.choices ?? NoChoices;
  const host = url.host;
  let outcome: Outcome;
  if (input.from === 'external') {
    outcome = fromExternal(tracer, host, port, url.scheme === 'https', input.via);
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

/** The parts of a request URL the trace needs. */
interface ParsedUrl {
  scheme: 'http' | 'https';
  /** Host name (IPv6 without brackets). */
  host: string;
  /** The port when the URL names a non-default one. */
  port: number | undefined;
  /** `host[:port]` as a client sends it in the Host header (default port left out). */
  authority: string;
  path: string;
  query: Record<string, string>;
}

/** URLs of this shape parse the same by hand as by WHATWG URL (lower-case host, no dot segments, query or escapes). */
const plainUrl =
  /^(https?):\/\/([a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(\d{1,5}))?(\/[A-Za-z0-9_~!$&'()*+,;=:@/-]*)?$/;

/** Parses an http(s) URL; throws TraceInputError for anything else. */
export function parseUrl(text: string): ParsedUrl {
  const plain = plainUrl.exec(text);
  // WHATWG reads a host whose last label is a number as IPv4 (`0` is 0.0.0.0): such hosts take the full parser.
  const lastLabel = plain?.[2]?.slice((plain[2] ?? '').lastIndexOf('.') + 1) ?? '';
  if (plain && !/^(\d+|0x[0-9a-f]*)$/.test(lastLabel) && !/\/\.\.?(\/|$)/.test(plain[4] ?? '')) {
    const scheme = plain[1] as 'http' | 'https';
    const host = plain[2] as string;
    const explicit = plain[3] === undefined ? undefined : Number(plain[3]);
    const port = explicit === (scheme === 'https' ? 443 : 80) ? undefined : explicit;
    return {
      scheme,
      host,
      port,
      authority: port === undefined ? host : `${host}:${port}`,
      path: plain[4] ?? '/',
      query: {},
    };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TraceInputError(
      `--url ${JSON.stringify(text)} is not a URL (write it as http://host[:port]/path)`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TraceInputError(`--url: only http and https are traced, got ${url.protocol}`);
  return {
    scheme: url.protocol === 'https:' ? 'https' : 'http',
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : undefined,
    authority: url.host,
    path: decodePath(url.pathname) || '/',
    query: url.search ? Object.fromEntries(url.searchParams.entries()) : {},
  };
}

/** The path with percent-escapes decoded; a path that does not decode stays as sent. */
function decodePath(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The workload named `ns/name` (a Deployment, StatefulSet, DaemonSet or Pod); the error names the closest ones. */
export function findWorkload(mesh: Mesh, from: string): Workload {
  const direct = mesh.workloadByName.get(from);
  if (direct) return direct;
  const [namespace, name] = from.split('/');
  if (!namespace || !name || from.split('/').length !== 2)
    throw new TraceInputError(`--from ${JSON.stringify(from)}: write NAMESPACE/WORKLOAD or external`);
  const found =
    mesh.workloadByName.get(from) ??
    mesh.workloads.find((w) => w.namespace === namespace && w.podName === name);
  if (found) return found;
  const names = [...mesh.workloadByName.keys()];
  // Names that contain what was asked come first (a workload named by its beginning), then by edit distance.
  const closest = names
    .map((n) => ({ n, d: editDistance(n, from) - (n.includes(from) ? 1000 : 0) }))
    .sort((a, b) => a.d - b.d || (a.n < b.n ? -1 : 1))
    .slice(0, 3)
    .map((x) => x.n);
  throw new TraceInputError(
    `--from ${from}: no such workload${closest.length ? `; closest: ${closest.join(', ')}` : ' (the input has no workloads)'}`,
  );
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length] as number;
}

/** A client outside the cluster: it enters through the ingress gateway whose server serves the URL's host and port. */
function fromExternal(t: Tracer, host: string, port: number, https: boolean, via?: string): Outcome {
  const names = (p: GatewayProxy) => [
    `${p.workload.namespace}/${p.workload.name}`,
    ...(p.gatewayApiName ? [`${p.workload.namespace}/${p.gatewayApiName}`] : []),
  ];
  const all = [...t.mesh.gateways.values()];
  const proxies = via === undefined ? all : all.filter((p) => names(p).includes(via));
  if (via !== undefined && proxies.length === 0)
    throw new TraceInputError(
      `--via ${via}: no such ingress gateway; the gateways are ${all.flatMap(names).join(', ') || 'none'}`,
    );
  // Of the gateways that serve the host and port, the first that also has routes for it wins (several
  // gateways often serve `*` on port 80, and only one of them routes the host).
  const candidates = serving(proxies, host, port);
  const routed = candidates.find(({ proxy, server }) => {
    const table = gatewayRouteTable(t.mesh, proxy, server.listenPort);
    return table !== undefined && pickDomain(table.virtualHosts, host) !== undefined;
  });
  const chosen = routed ?? candidates[0];
  if (chosen) {
    const { proxy, server } = chosen;
    return gateway(
      t,
      proxy,
      connection(undefined, -1, false, proxy.workload.ip, server.listenPort, proxy.workload, https),
    );
  }
  throw new TraceInputError(
    `--from external: ${via === undefined ? 'no ingress gateway serves' : `${via} does not serve`} ${host}:${port} (no Gateway server lists that host and port)`,
  );
}

/** The gateways (and their server) whose Gateway servers take this host and port. */
function serving(
  proxies: readonly GatewayProxy[],
  host: string,
  port: number,
): { proxy: GatewayProxy; server: GatewayProxy['servers'][number] }[] {
  return proxies.flatMap((proxy) => {
    const server = proxy.servers.find(
      (s) =>
        s.port === port &&
        s.hosts.some((h) => hostCovers(h.includes('/') ? (h.split('/')[1] ?? '') : h, host)),
    );
    return server ? [{ proxy, server }] : [];
  });
}

/** The ingress gateways an outside client can enter through for this host and port, as `--via` names them. */
export function ingressGatewaysServing(mesh: Mesh, host: string, port: number): string[] {
  return serving([...mesh.gateways.values()], host, port).map(
    ({ proxy }) => `${proxy.workload.namespace}/${proxy.workload.name}`,
  );
}

function hostCovers(pattern: string, host: string): boolean {
  return pattern === '*' || pattern === host || (pattern.startsWith('*.') && host.endsWith(pattern.slice(1)));
}

/** A client without a proxy: DNS, then straight to an endpoint of the Service (kube-proxy), plaintext. */
function direct(t: Tracer, client: Workload, host: string, port: number): Outcome {
  const resolution = resolveHost(t.mesh, host, client.namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${client.namespace}`);
  const conn = connectionTo(t, resolution, port, client, -1);
  if (!conn) return { code: 503, flags: '-', hop: -1, summary: `no endpoint behind ${host}:${port}` };
  return deliver(t, conn);
}

/** The connection kube-proxy makes for `ip:port`: a VIP picks the Service's first endpoint and maps the port. */
function connectionTo(
  t: Tracer,
  resolution: Resolution,
  port: number,
  sender: Workload | undefined,
  senderHop: number,
): Connection | undefined {
  const ip = resolution.kind === 'nxdomain' ? '' : resolution.ip;
  const service = t.mesh.serviceByVip.get(ip);
  if (service) {
    const servicePort = service.ports.find((p) => p.port === port);
    const endpoint = service.endpoints[0];
    if (!servicePort || !endpoint) return undefined;
    return connection(
      sender,
      senderHop,
      false,
      endpoint.ip,
      endpoint.portFor(servicePort),
      endpoint.workload,
    );
  }
  return connection(sender, senderHop, false, ip, port, t.mesh.workloadByIp.get(ip));
}

/** Step: the client sidecar's outbound path (listener → virtual host → route → cluster). */
function sidecarOutbound(t: Tracer, client: Workload, host: string, port: number): Outcome {
  const resolution = resolveHost(t.mesh, host, client.namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${client.namespace} (no such Service)`);
  const scope = sidecarScopeOf(t.mesh, client);
  const listener = outboundListener(t.mesh, scope, resolution.ip, port);
  const hop = t.hop('sidecar', client, 'outbound', listener.name);
  if (resolution.kind === 'service' && resolution.via.length > 0)
    t.at(hop).notes.push(
      `DNS: ${resolution.via.join(' → ')} → ${resolution.service.hostname} (${resolution.ip})`,
    );
  if (listener.kind === 'none') return tcpCatchAll(t, client, scope, hop, resolution, port);
  if (listener.kind === 'tcp') {
    t.at(hop).notes.push(
      `port ${port} of ${listener.service.hostname} is ${listener.port.protocol}: TCP proxy, no HTTP routing`,
    );
    return toCluster(t, client, hop, { host: listener.service.hostname, port }, scope, true);
  }
  const table = listener.table;
  t.at(hop).routeConfig = table.name;
  const vhost = selectVirtualHost(t.mesh, table, t.request.authority, client.namespace);
  if (!vhost) {
    const authority = t.request.authority;
    if (table.catchAll === 'block_all') {
      Object.assign(t.at(hop), { virtualHost: 'block_all', route: 'block_all', cluster: 'BlackHoleCluster' });
      t.at(hop).notes.push(
        `no virtual host for ${hostWithoutPort(authority)} on port ${port}; REGISTRY_ONLY answers 502`,
      );
      t.reportCatchAll(hop, client, 'blackhole', false);
      return t.localReply(
        hop,
        502,
        '-',
        `REGISTRY_ONLY: ${hostWithoutPort(authority)} is not in ${client.namespace}/${client.name}'s registry → BlackHoleCluster 502`,
      );
    }
    Object.assign(t.at(hop), {
      virtualHost: 'allow_any',
      route: 'allow_any',
      cluster: 'PassthroughCluster',
      upstream: `${resolution.ip}:${port}`,
    });
    t.at(hop).notes.push(
      `no virtual host for ${hostWithoutPort(authority)} on port ${port}: the request leaves the mesh through PassthroughCluster to the original destination`,
    );
    t.reportCatchAll(hop, client, 'passthrough', false);
    const conn = connectionTo(t, resolution, port, client, hop);
    if (!conn) return t.localReply(hop, 503, 'UF', `nothing listens at ${resolution.ip}:${port}`);
    return deliver(t, conn);
  }
  t.at(hop).virtualHost = vhost.name;
  if (!vhost.rules) {
    const service = vhost.services[0] as MeshService;
    t.at(hop).route = 'default';
    return toCluster(t, client, hop, { host: service.hostname, port }, scope, false);
  }
  const vs = vhost.virtualService as ResolvedVirtualService;
  t.at(hop).virtualService = `${vs.namespace}/${vs.name}`;
  const context: MatchContext = {
    gateways: MeshOnly,
    port,
    sourceLabels: client.labels,
    sourceNamespace: client.namespace,
  };
  const matched = firstMatchingRule(vhost.rules, t.request, context);
  if (!matched) {
    return t.replyWithoutUpstream(
      hop,
      client,
      true,
      404,
      'NR',
      `no route of VirtualService ${vs.namespace}/${vs.name} matches ${t.request.method} ${t.request.path}`,
    );
  }
  return takeRoute(t, client, hop, vs, matched, port, scope, true);
}

/** No listener for `ip:port`: the outbound catch-all sends TCP to PassthroughCluster or BlackHoleCluster. */
function tcpCatchAll(
  t: Tracer,
  client: Workload,
  scope: SidecarScope,
  hop: number,
  resolution: Resolution,
  port: number,
): Outcome {
  if (scope.outboundTrafficPolicy === 'REGISTRY_ONLY') {
    Object.assign(t.at(hop), { cluster: 'BlackHoleCluster', route: 'tcp' });
    t.reportCatchAll(hop, client, 'blackhole', true);
    return t.localReply(
      hop,
      0,
      '-',
      `no listener for port ${port}; REGISTRY_ONLY closes the connection (BlackHoleCluster, TCP)`,
    );
  }
  Object.assign(t.at(hop), { cluster: 'PassthroughCluster', route: 'tcp' });
  t.at(hop).notes.push(`no listener for port ${port}: TCP passthrough, no HTTP metrics at this proxy`);
  t.reportCatchAll(hop, client, 'passthrough', true);
  const conn = connectionTo(t, resolution, port, client, hop);
  if (!conn)
    return t.localReply(
      hop,
      503,
      'UF',
      `nothing listens at ${resolution.kind === 'nxdomain' ? '' : resolution.ip}:${port}`,
    );
  return deliver(t, conn);
}

/** Applies a matched rule: local replies (redirect, direct response, abort), rewrites, then the destination. */
function takeRoute(
  t: Tracer,
  proxy: Workload,
  hop: number,
  vs: ResolvedVirtualService,
  matched: MatchedRule,
  port: number,
  scope: SidecarScope | undefined,
  hostFallback: boolean,
): Outcome {
  const { rule } = matched;
  t.at(hop).route = rule.name ?? `${vs.namespace}/${vs.name}#http[${matched.index}]`;
  const reply = (code: number, flags: string, why: string) =>
    t.replyWithoutUpstream(hop, proxy, hostFallback, code, flags, why);
  if (rule.redirect) {
    return reply(rule.redirect.redirectCode ?? 301, '-', `redirected by ${t.at(hop).route}`);
  }
  if (rule.directResponse) {
    return reply(rule.directResponse.status, '-', `direct response from ${t.at(hop).route}`);
  }
  const abort = rule.fault?.abort;
  if (abort?.httpStatus !== undefined && (abort.percentage?.value ?? 100) >= 100) {
    return reply(abort.httpStatus, 'FI', `fault injection aborts with ${abort.httpStatus}`);
  }
  rewrite(t, rule, matched);
  applyHeaders(t, rule.headers);
  t.at(hop).authority = t.request.authority;
  t.at(hop).path = t.request.path;
  const destinations = (rule.route ?? []).filter(
    (d) => (d.weight ?? (rule.route?.length === 1 ? 100 : 0)) > 0 || rule.route?.length === 1,
  );
  if (destinations.length === 0) {
    return reply(503, 'NC', `${t.at(hop).route} has no destination`);
  }
  const resolved = destinations.map((d) => {
    const host = resolveShortName(d.destination.host, vs.namespace, t.mesh.clusterDomain);
    const service = serviceForHost(t.mesh, host);
    const onlyPort = service?.ports.length === 1 ? service.ports[0]?.port : undefined;
    const destPort = d.destination.port?.number ?? onlyPort ?? port;
    const clusterHost =
      service && service.hostname !== host && t.mesh.behaviour.externalNameAlias ? service.hostname : host;
    return {
      d,
      host: clusterHost,
      port: destPort,
      subset: d.destination.subset,
      weight: d.weight ?? 100,
      service,
    };
  });
  const heaviest = resolved.reduce((best, r, i) => (r.weight > (resolved[best]?.weight ?? 0) ? i : best), 0);
  const choice = resolved.length > 1 ? (t.choices[t.splits.length] ?? heaviest) : 0;
  const chosen = resolved[Math.min(choice, resolved.length - 1)] as (typeof resolved)[number];
  if (resolved.length > 1) {
    t.splits.push({
      options: resolved.length,
      taken: choice,
      weight: chosen.weight,
      total: resolved.reduce((sum, r) => sum + r.weight, 0),
    });
  }
  if (resolved.length > 1) {
    t.at(hop).split = resolved.map((r) => ({
      cluster: `outbound|${r.port}|${r.subset ?? ''}|${r.host}`,
      weight: r.weight,
    }));
    t.at(hop).notes.push(
      `weighted split; tracing ${choice === heaviest ? 'the heaviest' : 'the'} destination outbound|${chosen.port}|${chosen.subset ?? ''}|${chosen.host}`,
    );
  }
  applyHeaders(t, chosen.d.headers);
  t.at(hop).authority = t.request.authority;
  return toCluster(
    t,
    proxy,
    hop,
    {
      host: chosen.host,
      port: chosen.port,
      subset: chosen.subset,
      gatewaySemantics: vs.gatewaySemantics === true,
      service: chosen.service,
    },
    scope,
    false,
    hostFallback,
  );
}

/**
 * The request with some parts changed, always in one object shape (an object spread here would give the
 * rewritten requests of many routes many hidden classes, and every later read of them would slow down).
 */
function requestWith(
  r: HttpRequest,
  change: { path?: string; authority?: string; headers?: Readonly<Record<string, string>> },
): HttpRequest {
  return {
    method: r.method,
    scheme: r.scheme,
    authority: change.authority ?? r.authority,
    path: change.path ?? r.path,
    query: r.query,
    headers: change.headers ?? r.headers,
  };
}

function rewrite(t: Tracer, rule: HttpRule, matched: MatchedRule): void {
  const rw = rule.rewrite;
  if (!rw) return;
  if (rw.uriRegexRewrite) {
    const re = new RegExp(rw.uriRegexRewrite.match);
    t.request = requestWith(t.request, {
      path: t.request.path.replace(re, rw.uriRegexRewrite.rewrite.replace(/\\(\d)/g, '$$$1')),
    });
  } else if (rw.uri !== undefined) {
    const prefix = rw.fullPath
      ? undefined
      : (matched.match?.uri?.prefix ?? matched.match?.uri?.pathSeparatedPrefix);
    const path = prefix !== undefined ? rw.uri + t.request.path.slice(prefix.length) : rw.uri;
    t.request = requestWith(t.request, { path: path.replace(/\/\/+/g, '/') || '/' });
  }
  if (rw.authority) t.request = requestWith(t.request, { authority: rw.authority });
}

/** `headers.request` set/add/remove; setting `Host` or `:authority` rewrites the authority. */
function applyHeaders(t: Tracer, ops: HeaderOperations | undefined): void {
  const request = ops?.request;
  if (!request) return;
  const headers = { ...t.request.headers };
  let authority = t.request.authority;
  for (const [k, v] of Object.entries(request.set ?? {})) {
    const name = k.toLowerCase();
    if (name === 'host' || name === ':authority') authority = v;
    else headers[name] = v;
  }
  for (const [k, v] of Object.entries(request.add ?? {}))
    headers[k.toLowerCase()] = headers[k.toLowerCase()] ? `${headers[k.toLowerCase()]},${v}` : v;
  const removed = new Set((request.remove ?? []).map((k) => k.toLowerCase()));
  const kept = Object.fromEntries(Object.entries(headers).filter(([k]) => !removed.has(k)));
  t.request = requestWith(t.request, { headers: kept, authority });
}

/** Step: the cluster `outbound|port|subset|host` — endpoint, TLS, the report, then the next proxy. */
function toCluster(
  t: Tracer,
  proxy: Workload,
  hop: number,
  dest: {
    host: string;
    port: number;
    subset?: string | undefined;
    gatewaySemantics?: boolean;
    service?: MeshService | undefined;
  },
  scope: SidecarScope | undefined,
  tcp: boolean,
  hostFallback = true,
): Outcome {
  const clusterName = `outbound|${dest.port}|${dest.subset ?? ''}|${dest.host}`;
  t.at(hop).cluster = clusterName;
  // A route to a cluster that does not exist: Envoy answers 503 NC, Gateway API routes 500 (§1.4).
  const noCluster = dest.gatewaySemantics ? 500 : 503;
  const fail = (code: number, flags: string, why: string) =>
    t.replyWithoutUpstream(hop, proxy, hostFallback, code, flags, why, tcp);
  // The route step already resolved the destination's service; the catch-all and TCP paths look it up here.
  const service = 'service' in dest ? dest.service : serviceForHost(t.mesh, dest.host);
  const visible =
    service &&
    (scope
      ? sees(scope, service) || aliasVisible(t.mesh, scope, dest.host)
      : isExportedTo(service.exportTo, service.namespace, proxy.namespace));
  if (!service || !visible)
    return fail(
      noCluster,
      'NC',
      `cluster ${clusterName} does not exist (${dest.host} is not a Service visible here)`,
    );
  const servicePort = service.ports.find((p) => p.port === dest.port);
  if (!servicePort)
    return fail(
      noCluster,
      'NC',
      `cluster ${clusterName} does not exist (${service.hostname} has no port ${dest.port})`,
    );
  let target = service;
  let targetPort = servicePort;
  if (service.type === 'ExternalName') {
    // Before aliasing (1.20) an ExternalName is a DNS cluster: the connection goes where its name resolves.
    const resolution = resolveHost(t.mesh, `${service.externalName ?? ''}.`, proxy.namespace);
    if (resolution.kind !== 'service')
      return fail(503, 'UH', `${service.externalName ?? ''} does not resolve to a Service`);
    target = resolution.service;
    const p = target.ports.find((x) => x.port === dest.port);
    if (!p) return fail(503, 'UF', `${target.hostname} has no port ${dest.port}`);
    targetPort = p;
    t.at(hop).notes.push(`DNS cluster: ${service.hostname} → ${target.hostname}`);
  }
  const subsetLabels = dest.subset
    ? subsetLabelsOf(t, proxy.namespace, service, dest.host, dest.subset)
    : undefined;
  if (dest.subset && !subsetLabels)
    return fail(
      noCluster,
      'NC',
      `cluster ${clusterName} does not exist (no DestinationRule defines subset ${dest.subset})`,
    );
  const endpoint = subsetLabels
    ? target.endpoints.find((e) => e.workload !== undefined && labelsMatch(e.workload.labels, subsetLabels))
    : target.endpoints[0];
  if (!endpoint) return fail(503, 'UH', `no healthy endpoint in ${clusterName}`);
  const endpointPort = endpoint.portFor(targetPort);
  if (endpoint.workload?.proxy === 'ambient' && !tcp) {
    const ambient = toAmbientEndpoint(
      t,
      proxy,
      hop,
      target,
      dest.port,
      { ip: endpoint.ip, workload: endpoint.workload },
      endpointPort,
    );
    if (ambient) return ambient;
  }
  const tls = t.mesh.security.upstreamTls(
    proxy.namespace,
    service,
    dest.host,
    dest.port,
    dest.subset,
    endpoint.workload,
    endpointPort,
  );
  const mtls = tls.mode === 'ISTIO_MUTUAL';
  const h = t.at(hop);
  h.mtls = mtls;
  h.tls = `${tls.mode} (${tls.reason})`;
  h.upstream = `${endpoint.ip}:${endpointPort}${endpoint.workload ? ` (${endpoint.workload.namespace}/${endpoint.workload.name})` : ''}`;
  t.reports.push(
    forwardReport(t, proxy, hop, service, endpoint.workload, {
      hostFallback,
      cluster: { kind: 'service', service, host: dest.host },
      mtls,
      tcp,
    }),
  );
  return deliver(t, connection(proxy, hop, mtls, endpoint.ip, endpointPort, endpoint.workload));
}

/**
 * An ambient endpoint reached from a sidecar, gateway or waypoint (§5.6): HBONE straight to the pod, or, for an
 * ingress gateway whose service opts in with `istio.io/ingress-use-waypoint`, to the service's waypoint.
 * Sidecars never use the destination's waypoint: the hop says so.
 */
function toAmbientEndpoint(
  t: Tracer,
  proxy: Workload,
  hop: number,
  service: MeshService,
  port: number,
  endpoint: { ip: string; workload: Workload },
  endpointPort: number,
): Outcome | undefined {
  const waypoint = t.ambient.service(service).waypoint;
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
  return deliver(t, connection(proxy, hop, true, endpoint.ip, endpointPort, endpoint.workload));
}

/**
 * The report of a proxy forwarding to an endpoint of `service`: a waypoint reports for the client it serves
 * (`reporter="waypoint"`); a sidecar or gateway reports as the source.
 */
function forwardReport(
  t: Tracer,
  proxy: Workload,
  hop: number,
  service: MeshService,
  peer: Workload | undefined,
  source: { hostFallback: boolean; cluster: ReportedCluster; mtls: boolean; tcp: boolean },
): PendingReport {
  if (proxy.proxy === 'waypoint')
    return waypointReport(t.mesh, {
      waypoint: proxy,
      client: t.waypointClient,
      service,
      endpoint: peer,
      hop,
    });
  return clientReport(t.mesh, {
    proxy,
    hostFallback: source.hostFallback,
    authority: t.request.authority,
    cluster: source.cluster,
    peer,
    mtls: source.mtls,
    hop,
    tcp: source.tcp,
  });
}

function aliasVisible(mesh: Mesh, scope: SidecarScope, host: string): boolean {
  const alias = mesh.serviceByHostname.get(host);
  return alias !== undefined && sees(scope, alias);
}

function subsetLabelsOf(
  t: Tracer,
  clientNamespace: string,
  service: MeshService,
  host: string,
  subset: string,
): Record<string, string> | undefined {
  const rule = t.mesh.security.destinationRuleFor(clientNamespace, service.namespace, host);
  const subsets = specIfKind(rule, 'networking.istio.io/DestinationRule').subsets ?? [];
  const found = subsets.find((s) => s.name === subset);
  return found ? (found.labels ?? {}) : undefined;
}

/** Step: hand the connection to whatever runs at its address. */
function deliver(t: Tracer, conn: Connection): Outcome {
  if (t.hops.length >= MaxHops)
    return t.localReply(conn.senderHop, 508, 'LOOP', `routing loop: more than ${MaxHops} proxy hops`);
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

/**
 * Whether an HTTP proxy (sidecar, gateway, waypoint) sent the connection. When the server side resets it,
 * such a proxy answers its client with a 503; a client with no proxy, or behind ztunnel (L4), sees the reset.
 */
function sentByHttpProxy(t: Tracer, conn: Connection): boolean {
  return conn.senderHop >= 0 && t.at(conn.senderHop).kind !== 'ztunnel';
}

/** Step: the server sidecar's inbound path — PeerAuthentication, authorization, the destination report. */
function sidecarInbound(t: Tracer, w: Workload, conn: Connection): Outcome {
  const hop = t.hop('sidecar', w, 'inbound', 'virtualInbound', conn.mtls);
  t.at(hop).cluster = `inbound|${conn.port}||`;
  const { peerAuth, service, policies } = inboundPort(t.mesh, w, conn.port);
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
  const decision = authorize(t, hop, w, conn, policies);
  if (!service) t.at(hop).cluster = t.mesh.behaviour.inboundPassthroughCluster;
  t.reports.push(serverReport(t.mesh, { proxy: w, peer: conn.sender, mtls: conn.mtls, service, hop }));
  if (!decision.allowed)
    return t.localReply(hop, 403, '-', `RBAC: access denied at ${w.namespace}/${w.name}: ${decision.reason}`);
  return answered(`${w.namespace}/${w.name}`, ` on port ${conn.port}`);
}

function authorize(
  t: Tracer,
  hop: number,
  w: Workload,
  conn: Connection,
  policies: readonly KubeObject[],
): AuthzDecision {
  if (policies.length === 0) {
    t.at(hop).decision = 'allow';
    return NoPolicy;
  }
  const jwt = requestPrincipalOf(t.request.headers);
  const decision = t.mesh.authorization.evaluate(policies, {
    principal: conn.mtls && conn.sender ? principalOf(conn.sender, t.mesh.config.trustDomain) : undefined,
    sourceIp: conn.sender?.ip ?? '198.51.100.7',
    requestPrincipal: jwt,
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

const NoPolicy: AuthzDecision = { allowed: true, decision: 'allow', reason: 'no policy applies' };

/** `iss/sub` of a bearer JWT in the Authorization header (its signature is not checked offline). */
function requestPrincipalOf(headers: Readonly<Record<string, string>>): string | undefined {
  const authorization = headers['authorization'];
  if (authorization === undefined) return undefined;
  const token = /^Bearer\s+([^.\s]+)\.([^.\s]+)\.[^.\s]*$/i.exec(authorization);
  if (!token) return undefined;
  try {
    const base64 = (token[2] ?? '').replace(/-/g, '+').replace(/_/g, '/');
    const payload = JSON.parse(atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, '='))) as {
      iss?: string;
      sub?: string;
    };
    return payload.iss && payload.sub ? `${payload.iss}/${payload.sub}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a workload's inbound side has on one of its ports: the mTLS mode, the service it reports and (for a
 * sidecar) its policies. Server sidecars read it per hop; destination ztunnels read it once per verdict.
 */
interface InboundPort {
  port: number;
  peerAuth: { mode: MtlsMode; policy?: string };
  service: MeshService | undefined;
  policies: readonly KubeObject[];
}

/** A workload's inbound ports, worked out once per mesh and kept in one list per workload (one lookup per hop). */
function inboundPort(mesh: Mesh, w: Workload, port: number): InboundPort {
  let index = mesh.cache.get('inbound-ports') as Map<Workload, InboundPort[]> | undefined;
  if (!index) mesh.cache.set('inbound-ports', (index = new Map()));
  let ports = index.get(w);
  if (!ports) index.set(w, (ports = []));
  for (const p of ports) if (p.port === port) return p;
  const entry: InboundPort = {
    port,
    peerAuth: mesh.security.peerAuthenticationMode(w, port),
    service: inboundService(mesh, w, port),
    policies: mesh.authorization.forWorkload(w),
  };
  ports.push(entry);
  return entry;
}

const NoEntries: readonly never[] = [];

/** The service an inbound cluster reports: the first Service (by name) with this pod as endpoint on this port. */
function inboundService(mesh: Mesh, w: Workload, port: number): MeshService | undefined {
  let index = mesh.cache.get('inbound-services') as
    Map<Workload, { service: MeshService; ports: Set<number> }[]> | undefined;
  if (!index) {
    index = new Map();
    for (const s of mesh.services) {
      for (const e of s.endpoints) {
        if (!e.workload) continue;
        const entries = index.get(e.workload) ?? [];
        entries.push({ service: s, ports: new Set(s.ports.map((p) => e.portFor(p))) });
        index.set(e.workload, entries);
      }
    }
    mesh.cache.set('inbound-services', index);
  }
  for (const entry of index.get(w) ?? NoEntries)
    if (entry.service.namespace === w.namespace && entry.ports.has(port)) return entry.service;
  return undefined;
}

/** Step: a gateway — listener at the arrival port, TLS, authorization, virtual host, route. */
function gateway(t: Tracer, proxy: GatewayProxy, conn: Connection): Outcome {
  const w = proxy.workload;
  const table = gatewayRouteTable(t.mesh, proxy, conn.port);
  const hop = t.hop('gateway', w, 'outbound', `0.0.0.0_${conn.port}`, conn.mtls);
  if (!table) {
    t.at(hop).notes.push(`no HTTP server listens on port ${conn.port}`);
    return t.localReply(
      conn.senderHop,
      503,
      'UF',
      `${w.namespace}/${w.name} has no listener on port ${conn.port}`,
    );
  }
  t.at(hop).routeConfig = table.name;
  const wantsIstioMtls = table.servers.some((s) => s.protocol === 'HTTPS' && s.tlsMode === 'ISTIO_MUTUAL');
  const plain = table.servers.some((s) => s.protocol !== 'HTTPS');
  const terminatesTls = table.servers.some((s) => s.protocol === 'HTTPS' && s.tlsMode !== 'ISTIO_MUTUAL');
  const accepted = conn.mtls ? wantsIstioMtls : conn.externalTls ? terminatesTls : plain;
  if (!accepted) {
    t.at(hop).notes.push(
      `the servers on port ${conn.port} expect ${wantsIstioMtls ? 'Istio mTLS' : terminatesTls ? 'TLS' : 'plaintext'}`,
    );
    return t.localReply(conn.senderHop, 503, 'UF', `TLS mismatch at ${w.namespace}/${w.name}:${conn.port}`);
  }
  const decision = authorize(t, hop, w, conn, t.mesh.authorization.forWorkload(w, proxy.gatewayApiName));
  if (!decision.allowed) {
    return t.replyWithoutUpstream(
      hop,
      w,
      false,
      403,
      '-',
      `RBAC: access denied at gateway ${w.namespace}/${w.name}: ${decision.reason}`,
    );
  }
  const vhost = pickDomain(table.virtualHosts, hostWithoutPort(t.request.authority).toLowerCase());
  const noRoute = (why: string) => t.replyWithoutUpstream(hop, w, false, 404, 'NR', why);
  if (!vhost)
    return noRoute(
      `gateway ${w.namespace}/${w.name} has no virtual host for ${hostWithoutPort(t.request.authority)} on ${table.name}`,
    );
  t.at(hop).virtualHost = `${vhost.domain}:${conn.port}`;
  const context: MatchContext = {
    gateways: table.gatewayNames,
    port: table.servers[0]?.port ?? conn.port,
    sourceLabels: w.labels,
    sourceNamespace: w.namespace,
  };
  const routed = firstRoute(t, w, hop, vhost.routes, context);
  if (routed) return routed;
  return noRoute(
    `no route on gateway ${w.namespace}/${w.name} matches ${t.request.method} ${t.request.authority}${t.request.path}`,
  );
}

const admitsAll = (): boolean => true;
const withoutSourceLabels = (m: HttpMatch): boolean => m.sourceLabels === undefined;

/** Takes the first route whose rule has no match or a match that applies here and fits the request. */
function firstRoute(
  t: Tracer,
  w: Workload,
  hop: number,
  routes: readonly { rule: HttpRule; vs: ResolvedVirtualService }[],
  context: MatchContext,
  admits: (match: HttpMatch) => boolean = admitsAll,
): Outcome | undefined {
  for (let index = 0; index < routes.length; index++) {
    const { rule, vs } = routes[index] as { rule: HttpRule; vs: ResolvedVirtualService };
    let match: HttpMatch | undefined;
    for (const m of rule.match ?? [])
      if (admits(m) && matchApplies(m, context) && requestMatches(m, t.request)) {
        match = m;
        break;
      }
    if (rule.match && rule.match.length > 0 && !match) continue;
    t.at(hop).virtualService = `${vs.namespace}/${vs.name}`;
    return takeRoute(
      t,
      w,
      hop,
      vs,
      match ? { rule, index, match } : { rule, index },
      context.port,
      undefined,
      false,
    );
  }
  return undefined;
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
    canonicalService: 'ztunnel',
    canonicalRevision: 'latest',
    containerPorts: new Map(),
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ztunnel' } },
  };
}

/**
 * Step: the client's ztunnel (§5.2). A service VIP whose service uses a waypoint → HBONE to the waypoint;
 * otherwise an endpoint of the service (or the addressed pod): HBONE to an ambient pod, plaintext to
 * anything that can't tunnel. ztunnel never rewrites or routes by Host.
 */
function ztunnelOutbound(t: Tracer, client: Workload, host: string, port: number): Outcome {
  const resolution = resolveHost(t.mesh, host, client.namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${client.namespace} (no such Service)`);
  const hop = t.hop('ztunnel', t.ambient.ztunnel, 'outbound', 'outbound capture (15001)');
  t.at(hop).notes.push(`for ${client.namespace}/${client.name}`);
  // A name resolves to its Service's VIP (no second lookup); a headless name or an IP goes by address.
  const service =
    resolution.kind === 'service' && resolution.service.vip === resolution.ip
      ? resolution.service
      : t.mesh.serviceByVip.get(resolution.ip);
  const waypoint = service ? t.ambient.service(service).waypoint : undefined;
  if (service && waypoint) {
    const h = t.at(hop);
    h.route = 'waypoint';
    h.cluster = `connect_originate (${waypoint.namespace}/${waypoint.name})`;
    h.upstream = `${waypoint.workload.ip}:15008 (${waypoint.namespace}/${waypoint.name})`;
    h.mtls = true;
    h.tls = 'HBONE';
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
  const servicePort = service?.ports.find((p) => p.port === port);
  const endpoint = service ? service.endpoints[0] : undefined;
  if (service && (!servicePort || !endpoint))
    return t.localReply(hop, 0, '-', `no endpoint behind ${service.hostname}:${port} (connection refused)`);
  const ip = endpoint ? endpoint.ip : resolution.ip;
  const targetPort = endpoint && servicePort ? endpoint.portFor(servicePort) : port;
  const workload = endpoint ? endpoint.workload : t.mesh.workloadByIp.get(ip);
  const hbone =
    workload?.proxy === 'ambient' ||
    workload?.proxy === 'waypoint' ||
    (workload?.proxy === 'sidecar' && workload.labels[Label.Tunnel] === 'http');
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
  return deliver(t, connection(client, hop, hbone, ip, targetPort, workload));
}

/**
 * Step: a waypoint (§5.4): L7 authorization from policies whose targetRefs name it, the Service, or the
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
): Outcome {
  const w = waypoint.workload;
  t.waypointClient = client;
  const hop = t.hop('waypoint', w, 'inbound', `inbound-vip ${service.vip ?? service.hostname}:${port}`, true);
  t.at(hop).tls = 'HBONE (mTLS)';
  const policies = t.ambient.policies(service, waypoint);
  const decision =
    policies.length === 0
      ? NoPolicy
      : t.mesh.authorization.evaluate(policies, {
          principal: client ? principalOf(client, t.mesh.config.trustDomain) : undefined,
          sourceIp: client?.ip ?? '198.51.100.7',
          requestPrincipal: requestPrincipalOf(t.request.headers),
          host: t.request.authority,
          method: t.request.method,
          path: t.request.path,
          port,
          headers: t.request.headers,
          destinationIp: service.vip ?? '',
        });
  t.at(hop).decision = decision.decision;
  if (decision.policy) t.at(hop).policy = decision.policy;
  if (policies.length > 0) t.at(hop).notes.push(`authorization: ${decision.reason}`);
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
  const routes = t.ambient.routes(service, waypoint);
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
  return deliver(t, connection(w, hop, true, endpoint.ip, endpointPort, endpoint.workload));
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
class AmbientIndex {
  readonly ztunnel: Workload;
  readonly #mesh: Mesh;
  readonly #services = new Map<MeshService, ServiceAmbient>();
  readonly #inbound = new Map<Workload, Map<object, Map<number, InboundVerdict>>>();
  #routesByHost: ReturnType<typeof meshRoutesByHost> | undefined;

  constructor(mesh: Mesh) {
    this.#mesh = mesh;
    this.ztunnel = findZtunnel(mesh);
  }

  static of(mesh: Mesh): AmbientIndex {
    let index = mesh.cache.get('ambient') as AmbientIndex | undefined;
    if (!index) mesh.cache.set('ambient', (index = new AmbientIndex(mesh)));
    return index;
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
    return (entry.policies ??= findWaypointPolicies(this.#mesh, waypoint, service));
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

function findWaypointPolicies(mesh: Mesh, waypoint: Waypoint, service: MeshService): KubeObject[] {
  const candidates = mesh.authorization.inNamespaces(
    waypoint.namespace,
    service.namespace,
    mesh.config.rootNamespace,
  );
  return candidates.filter((p) => {
    const ns = p.metadata.namespace;
    return targetRefsOf(p).some(
      (r) =>
        (r.kind === 'Gateway' && r.name === waypoint.name && ns === waypoint.namespace) ||
        (r.kind === 'Service' && r.name === service.name && ns === service.namespace) ||
        (r.kind === 'GatewayClass' && r.name === GatewayClass.Waypoint && ns === mesh.config.rootNamespace),
    );
  });
}

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
 * Step: the destination's ztunnel (§5.3): STRICT PeerAuthentication refuses a connection without identity;
 * then L4 authorization against the sender's identity (the waypoint's, when one is on the path). A denial
 * resets the connection: the sender's ztunnel or proxy sees no HTTP response from upstream.
 */
function ztunnelInbound(t: Tracer, w: Workload, conn: Connection): Outcome {
  const hop = t.hop(
    'ztunnel',
    t.ambient.ztunnel,
    'inbound',
    conn.mtls ? 'HBONE (15008)' : 'inbound passthrough',
    conn.mtls,
  );
  t.at(hop).notes.push(`for ${w.namespace}/${w.name}:${conn.port}`);
  const { decision, service } = t.ambient.inbound(w, conn.sender, conn.port, conn.mtls);
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

/** A destination ztunnel's L4 authorization of a connection from `sender` (§5.3); `strict`: PeerAuthentication STRICT on the port. */
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
