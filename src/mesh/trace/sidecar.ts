/**
 * A sidecar's outbound walk (docs/semantics.md, "Sidecar outbound"): the listener the port selects, the
 * virtual host and route, rewrites and header operations, the cluster and the endpoint, TLS to it, and the
 * catch-all clusters (PassthroughCluster, BlackHoleCluster) when nothing matches.
 */
import { labelsMatch } from '../../load/snapshot.ts';
import { type Resolution, resolveHost } from '../dns.ts';
import { type MatchContext, type MatchedRule, firstMatchingRule, requestWith } from '../http-match.ts';
import { serviceForHost } from '../mesh.ts';
import { replaceEvery } from '../regex.ts';
import { type MeshService, type ServiceEndpoint, type ServicePort, isExportedTo } from '../services.ts';
import {
  type SidecarScope,
  hostWithoutPort,
  outboundListener,
  sees,
  selectVirtualHost,
  sidecarScopeOf,
} from '../sidecar-outbound.ts';
import { toAmbientEndpoint } from './ambient.ts';
import {
  type Connection,
  MeshOnly,
  type TraceOutcome,
  Tracer,
  connection,
  forwardReport,
  type Walks,
} from './tracer.ts';
import {
  type HeaderOperations,
  type HttpRule,
  type ResolvedVirtualService,
  resolveShortName,
} from '../virtual-services.ts';
import type { Workload } from '../workloads.ts';
import { specIfKind } from '../../model/specs.ts';
import { capturesOutbound } from '../capture.ts';
import type { Mesh } from '../compiled.ts';

/**
 * A client without a proxy: DNS, then straight to an endpoint of the Service (kube-proxy), plaintext.
 * Without a client workload it is a caller outside the mesh in the cluster network (the API server calling
 * a webhook): names resolve as from `default`, and it has no identity.
 */
export function direct(t: Tracer, client: Workload | undefined, host: string, port: number): TraceOutcome {
  const namespace = client?.namespace ?? 'default';
  const resolution = resolveHost(t.mesh, host, namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${namespace}`);
  const conn = connectionTo(t, resolution, port, client, -1);
  if (!conn) return { code: 503, flags: '-', hop: -1, summary: `no endpoint behind ${host}:${port}` };
  return t.walks.deliver(t, conn);
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
export function sidecarOutbound(t: Tracer, client: Workload, host: string, port: number): TraceOutcome {
  const resolution = resolveHost(t.mesh, host, client.namespace);
  if (resolution.kind === 'nxdomain')
    return t.localReply(-1, 0, 'DNS', `${host} does not resolve from ${client.namespace} (no such Service)`);
  // A port or address the pod does not redirect to its sidecar: the application connects as if it had none.
  if (!capturesOutbound(client, resolution.ip, port)) return direct(t, client, host, port);
  const scope = sidecarScopeOf(t.mesh, client);
  t.originalDestination = resolution.ip;
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
    return t.walks.deliver(t, conn);
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

/** The port a sidecar's outbound capture listens on (`virtualOutbound`). */
const OutboundCapturePort = 15001;

/** No listener for `ip:port`: the outbound catch-all sends TCP to PassthroughCluster or BlackHoleCluster. */
function tcpCatchAll(
  t: Tracer,
  client: Workload,
  scope: SidecarScope,
  hop: number,
  resolution: Resolution,
  port: number,
): TraceOutcome {
  // The catch-all's own port: sending to it would loop through the proxy, so it goes nowhere.
  if (port === OutboundCapturePort) {
    Object.assign(t.at(hop), { cluster: 'BlackHoleCluster', route: 'tcp' });
    t.reportCatchAll(hop, client, 'blackhole', true);
    return t.localReply(
      hop,
      0,
      'UH',
      `port ${port} is the proxy's own outbound capture port: BlackHoleCluster (no loop)`,
    );
  }
  if (scope.outboundTrafficPolicy === 'REGISTRY_ONLY') {
    Object.assign(t.at(hop), { cluster: 'BlackHoleCluster', route: 'tcp' });
    t.reportCatchAll(hop, client, 'blackhole', true);
    return t.localReply(
      hop,
      0,
      'UH',
      `no listener for port ${port}; REGISTRY_ONLY closes the connection (BlackHoleCluster has no host, TCP)`,
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
  return t.walks.deliver(t, conn);
}

/** Applies a matched rule: local replies (redirect, direct response, abort), rewrites, then the destination. */
export const takeRoute: Walks['takeRoute'] = (t, proxy, hop, vs, matched, port, scope, hostFallback) => {
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
  const resolved = destinations.map((d) => routeDestination(t.mesh, d, vs.namespace, port, scope));
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
      cluster: outboundCluster(r.port, r.subset, r.host),
      weight: r.weight,
    }));
    t.at(hop).notes.push(
      `weighted split; tracing ${choice === heaviest ? 'the heaviest' : 'the'} destination ${outboundCluster(chosen.port, chosen.subset, chosen.host)}`,
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
};

/** A route destination resolved: the cluster's host, port and subset, its weight and service. */
function routeDestination(
  mesh: Mesh,
  d: NonNullable<HttpRule['route']>[number],
  namespace: string,
  port: number,
  scope: SidecarScope | undefined,
) {
  const host = resolveShortName(d.destination.host, namespace, mesh.clusterDomain);
  const service = serviceForHost(mesh, host);
  // A destination without a port takes the service's only port at a gateway; a sidecar's route table
  // knows each service by the listener's port alone, so there it is always that port (docs/semantics.md,
  // Sidecar outbound).
  const onlyPort = !scope && service?.ports.length === 1 ? service.ports[0]?.port : undefined;
  const clusterHost =
    service && service.hostname !== host && mesh.behaviour.externalNameAlias ? service.hostname : host;
  return {
    d,
    host: clusterHost,
    port: d.destination.port?.number ?? onlyPort ?? port,
    subset: d.destination.subset,
    weight: d.weight ?? 100,
    service,
  };
}

function rewrite(t: Tracer, rule: HttpRule, matched: MatchedRule): void {
  const rw = rule.rewrite;
  if (!rw) return;
  if (rw.uriRegexRewrite) {
    const { match, rewrite: substitution } = rw.uriRegexRewrite;
    t.request = requestWith(t.request, { path: replaceEvery(match, substitution, t.request.path) });
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

/** Where a route sends a request: host, port and subset, with the service the route step resolved. */
interface ClusterDestination {
  host: string;
  port: number;
  subset?: string | undefined;
  gatewaySemantics?: boolean;
  service?: MeshService | undefined;
}

/** Step: the cluster `outbound|port|subset|host` — endpoint, TLS, the report, then the next proxy. */
function toCluster(
  t: Tracer,
  proxy: Workload,
  hop: number,
  dest: ClusterDestination,
  scope: SidecarScope | undefined,
  tcp: boolean,
  hostFallback = true,
): TraceOutcome {
  const clusterName = outboundCluster(dest.port, dest.subset, dest.host);
  t.at(hop).cluster = clusterName;
  const picked = clusterEndpoint(t, proxy, hop, dest, scope, clusterName);
  if ('why' in picked)
    return t.replyWithoutUpstream(hop, proxy, hostFallback, picked.code, picked.flags, picked.why, tcp);
  const { service, target, endpoint, endpointPort } = picked;
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
  return t.walks.deliver(t, connection(proxy, hop, mtls, endpoint.ip, endpointPort, endpoint.workload));
}

/** A cluster's chosen endpoint, or why the proxy answers without an upstream (code, response flags, reason). */
type ClusterPick =
  | { service: MeshService; target: MeshService; endpoint: ServiceEndpoint; endpointPort: number }
  | { code: number; flags: string; why: string };

/**
 * The outbound cluster a route destination names: `outbound|PORT|SUBSET|HOST`, or `UnknownService` for a
 * destination without a host (a Gateway API backend Istio dropped as invalid; no proxy has that cluster).
 */
function outboundCluster(port: number, subset: string | undefined, host: string): string {
  return host === '' ? 'UnknownService' : `outbound|${port}|${subset ?? ''}|${host}`;
}

/**
 * The service a cluster is for (visible from the proxy), the service its connections go to (the same, or
 * where an ExternalName resolves), and its first endpoint (of the subset, if one is named).
 */
function clusterEndpoint(
  t: Tracer,
  proxy: Workload,
  hop: number,
  dest: ClusterDestination,
  scope: SidecarScope | undefined,
  clusterName: string,
): ClusterPick {
  // A route to a cluster that does not exist: Envoy answers 503 NC, Gateway API routes 500 (docs/semantics.md, Gateway API routes).
  const noCluster = (why: string) => ({
    code: dest.gatewaySemantics ? 500 : 503,
    flags: 'NC',
    why: `cluster ${clusterName} does not exist (${why})`,
  });
  // The route step already resolved the destination's service; the catch-all and TCP paths look it up here.
  const service = 'service' in dest ? dest.service : serviceForHost(t.mesh, dest.host);
  const visible =
    service &&
    (scope
      ? sees(scope, service) || aliasVisible(t.mesh, scope, dest.host)
      : isExportedTo(service.exportTo, service.namespace, proxy.namespace));
  if (!service || !visible) return noCluster(`${dest.host} is not a Service visible here`);
  const servicePort = service.ports.find((p) => p.port === dest.port);
  if (!servicePort) return noCluster(`${service.hostname} has no port ${dest.port}`);
  let target = service;
  let targetPort = servicePort;
  if (service.type === 'ExternalName') {
    // Before aliasing (1.20) an ExternalName is a DNS cluster: the connection goes where its name resolves.
    const resolution = resolveHost(t.mesh, `${service.externalName ?? ''}.`, proxy.namespace);
    if (resolution.kind !== 'service')
      return { code: 503, flags: 'UH', why: `${service.externalName ?? ''} does not resolve to a Service` };
    target = resolution.service;
    const p = target.ports.find((x) => x.port === dest.port);
    if (!p) return { code: 503, flags: 'UF', why: `${target.hostname} has no port ${dest.port}` };
    targetPort = p;
    t.at(hop).notes.push(`DNS cluster: ${service.hostname} → ${target.hostname}`);
  }
  const subsetLabels = dest.subset
    ? subsetLabelsOf(t, proxy.namespace, service, dest.host, dest.subset)
    : undefined;
  if (dest.subset && !subsetLabels) return noCluster(`no DestinationRule defines subset ${dest.subset}`);
  // A headless Service's cluster sends to the address the client connected to, when that is its endpoint.
  const connectedTo =
    service.type === 'Headless' ? target.endpoints.find((e) => e.ip === t.originalDestination) : undefined;
  const endpoint =
    service.entry?.resolution === 'NONE' && target.endpoints.length === 0
      ? originalDestination(t)
      : subsetLabels
        ? target.endpoints.find(
            (e) => e.workload !== undefined && labelsMatch(e.workload.labels, subsetLabels),
          )
        : (connectedTo ?? target.endpoints[0]);
  if (!endpoint) return { code: 503, flags: 'UH', why: `no healthy endpoint in ${clusterName}` };
  return { service, target, endpoint, endpointPort: endpoint.portFor(targetPort) };
}

/**
 * The endpoint of an original-destination cluster: the address the client connected to (none at a proxy
 * that was not connected to for it, such as a gateway: Envoy then has no upstream host).
 */
function originalDestination(t: Tracer): ServiceEndpoint | undefined {
  const ip = t.originalDestination;
  if (ip === undefined) return undefined;
  const workload = t.mesh.workloadByIp.get(ip);
  const portFor = (sp: ServicePort) => (typeof sp.targetPort === 'number' ? sp.targetPort : sp.port);
  return workload ? { ip, workload, portFor } : { ip, portFor };
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
