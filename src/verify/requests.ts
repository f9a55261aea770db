/**
 * The requests of the equivalence check and what becomes of them: the matrix's shapes (every client ×
 * every Service port, ingress host and pod, × the paths, methods, headers and tokens the routes and
 * policies mention) and the outcome of one request on one configuration (see equivalence.ts).
 */
import { GroupKind } from '../model/vocabulary.ts';
import { at } from '../model/checked.ts';
import { specOf } from '../model/specs.ts';
import { policySpec } from '../mesh/authorization.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { isHttpProtocol, Protocol, servicePortsOf } from '../mesh/services.ts';
import { traceRequest } from '../mesh/trace.ts';
import type { Workload } from '../mesh/workloads.ts';
import type { TracedOutcome } from './client-classes.ts';
import type { Hop, TraceResult } from '../model/trace-result.ts';
import { TraceInputError } from '../mesh/trace/request.ts';
import { AnyIngressHost } from '../flows/flows.ts';
import { frontDoors, ingressGatewaysServing, outsideEntry } from '../mesh/trace/gateway.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { requestVariants } from '../mesh/request-variants.ts';

/** One request of the matrix. */
export interface MatrixRequest {
  from: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  /**
   * A request addressed to a pod, not a Service: the workload (`ns/name`) whose pod address is the URL's
   * host. Each configuration has its own address for the pod; the URL holds the first one's.
   */
  pod?: string;
  /** An outside client that enters by `kubectl port-forward` (`outsideEntry` of the configuration before). */
  portForward?: boolean;
}

/** What became of a request. */
export interface RequestOutcome {
  verdict: 'allowed' | 'denied' | 'failed';
  code: number;
  /** The application that answered (allowed). */
  answeredBy?: string;
  /** Where and by what the request was refused (denied), or what failed. */
  where?: string;
  /** The workload whose own sidecar refused the request (denied at the destination). */
  refusedBy?: string;
  /** From outside: the front doors of its host answer it differently (docs/semantics.md, One front door). */
  split?: boolean;
  summary: string;
}

export const ChangeSeverity = { Error: 'error', Warning: 'warning', Note: 'note' } as const;
export type ChangeSeverity = (typeof ChangeSeverity)[keyof typeof ChangeSeverity];

const maxPathsPerNamespace = 8;

/** How serious a change is; undefined when the outcome is the same. */
export function changeSeverity(was: RequestOutcome, now: RequestOutcome): ChangeSeverity | undefined {
  if (
    was.verdict === now.verdict &&
    was.code === now.code &&
    was.answeredBy === now.answeredBy &&
    was.split === now.split
  )
    return undefined;
  // A host split between two front doors: its clients get one answer or the other, as DNS decides.
  if (now.split === true && was.split !== true) return ChangeSeverity.Error;
  // Denied before and answered after opens access, unless the request was refused by one workload's own
  // sidecar and is now routed to another workload (a routing change, not a wider policy).
  if (now.verdict === 'allowed' && was.verdict === 'denied')
    return was.refusedBy !== undefined && was.refusedBy !== now.answeredBy
      ? ChangeSeverity.Warning
      : ChangeSeverity.Error;
  if (now.verdict === 'allowed' || was.verdict === 'allowed') return ChangeSeverity.Warning;
  return ChangeSeverity.Note;
}

/** An outcome in words (its names renamed by `rename`, when given). */
export function describeOutcome(o: RequestOutcome, rename = (text: string) => text): string {
  if (o.verdict === 'allowed')
    return `answered by ${o.answeredBy === undefined ? o.answeredBy : rename(o.answeredBy)}`;
  const where = o.where === undefined ? o.where : rename(o.where);
  if (o.verdict === 'denied') return `denied at ${where}`;
  return `failed: ${where}`;
}

/**
 * Traces one request and sums up its outcome. A request from outside goes to the one address its host
 * resolves to: it is traced through every front door of its host (the gateways that route it), and when
 * they answer it differently the host is split between them (docs/semantics.md, One front door): the
 * outcome says so, with each door's answer. A host no gateway routes is traced through the gateways that
 * serve it (the first that lets it through, else the first that refuses it).
 */
export function outcomeOf(mesh: Mesh, request: MatrixRequest): RequestOutcome {
  return outcomesByEntry(mesh, request).outcome;
}

/**
 * A request's outcome through each way in (from outside: its host's front doors when some gateway routes
 * it, else every gateway that serves it; else its one outcome), and what they sum up to (`outcomeOf`).
 */
export function outcomesByEntry(
  mesh: Mesh,
  request: MatrixRequest,
): { outcomes: RequestOutcome[]; outcome: RequestOutcome } {
  const one = (outcome: RequestOutcome) => ({ outcomes: [outcome], outcome });
  if (request.from !== 'external') return one(traceOutcome(mesh, request));
  const url = new URL(request.url);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const doors = frontDoors(mesh, url.hostname, port);
  const vias = doors.length > 0 ? doors : ingressGatewaysServing(mesh, url.hostname, port);
  if (vias.length === 0) return one(traceOutcome(mesh, request));
  const outcomes = vias.map((via) => traceOutcome(mesh, { ...request, via }));
  const first = at(outcomes, 0);
  if (doors.length === 0)
    return {
      outcomes,
      outcome:
        outcomes.find((o) => o.verdict === 'allowed') ??
        outcomes.find((o) => o.verdict === 'denied') ??
        first,
    };
  const alike = outcomes.every(
    (o) => o.verdict === first.verdict && o.code === first.code && o.answeredBy === first.answeredBy,
  );
  if (alike) return { outcomes, outcome: first };
  const each = outcomes.map((o, i) => `${describeOutcome(o)} through ${vias[i] ?? ''}`).join('; ');
  const where = `the front door of its host is split: ${each}`;
  return { outcomes, outcome: { verdict: 'failed', code: 0, where, split: true, summary: where } };
}

function traceOutcome(mesh: Mesh, request: MatrixRequest & { via?: string }): RequestOutcome {
  return tracedOutcome(mesh, request).outcome;
}

/**
 * A request's outcome, and the namespaces whose policies it could meet: those of its inbound hops and of
 * their deciding policies, of the workloads and Services it was sent to, and of the workload that answered.
 */
export function tracedOutcome(
  mesh: Mesh,
  request: MatrixRequest & { via?: string },
): TracedOutcome<RequestOutcome> {
  return request.pod === undefined ? traced(mesh, request) : podOutcome(mesh, request, request.pod);
}

/**
 * A request to a pod's address. What a client may get from a pod is what it gets by any address: when the
 * pod's address is refused but a Service that sends to that pod and port answers the same request from
 * the same pod, the pod is reached (as sidecars, which send pod addresses out through PassthroughCluster
 * without mTLS, and so without the identity their Service requests carry).
 */
function podOutcome(mesh: Mesh, request: MatrixRequest, name: string): TracedOutcome<RequestOutcome> {
  const pod = mesh.workloadByName.get(name);
  if (!pod) {
    const where = `no pod of ${name} in this configuration`;
    return { outcome: { verdict: 'failed', code: 0, where, summary: where }, namespaces: [] };
  }
  const url = new URL(request.url);
  url.hostname = pod.ip;
  const { pod: _pod, ...rest } = request;
  const direct = traced(mesh, { ...rest, url: url.toString() });
  const namespaces = new Set([...direct.namespaces, pod.namespace]);
  if (direct.outcome.verdict === 'allowed') return { outcome: direct.outcome, namespaces: [...namespaces] };
  // Refused by its address: reached through a Service, or at least not refused by a policy there. When a
  // Service's routes take the request elsewhere or nowhere, they say nothing of who may reach the pod, and
  // the refusal of the address may be only its missing identity: the outcome is then "not reached".
  let unrefused: RequestOutcome | undefined;
  for (const authority of servicesOfPod(mesh, pod, Number(url.port || 80))) {
    const via = traced(mesh, { ...rest, url: `http://${authority}${url.pathname}` });
    via.namespaces.forEach((n) => namespaces.add(n));
    if (via.outcome.verdict === 'allowed' && via.outcome.answeredBy === name)
      return { outcome: via.outcome, namespaces: [...namespaces] };
    if (direct.outcome.verdict === 'denied' && via.outcome.verdict !== 'denied') {
      const where = `${name} not reached: its address is refused, its Service ${authority} ${via.outcome.verdict === 'allowed' ? `routes to ${via.outcome.answeredBy ?? 'another workload'}` : 'takes no such request'}`;
      unrefused ??= { verdict: 'failed', code: direct.outcome.code, where, summary: where };
    }
  }
  return { outcome: unrefused ?? direct.outcome, namespaces: [...namespaces] };
}

/**
 * The Service addresses (`host:port`) whose requests a Service sends to this pod on this port: a
 * ClusterIP Service's name, and the pod's own name under a headless Service (which reaches that pod alone)
 * on a port the Service declares as it is.
 */
function servicesOfPod(mesh: Mesh, pod: Workload, port: number): string[] {
  const out = new Set<string>();
  for (const { service, port: p, targetPort } of servicePortsOf(mesh, pod)) {
    if (targetPort !== port) continue;
    const host =
      service.type === 'ClusterIP'
        ? service.hostname
        : // A name under a headless Service is dialled on the pod's own port (no VIP maps ports).
          service.type === 'Headless' && pod.dnsName?.subdomain === service.name && p.port === targetPort
          ? `${pod.dnsName.hostname}.${service.hostname}`
          : undefined;
    if (host) out.add(p.port === 80 ? host : `${host}:${p.port}`);
  }
  return [...out].sort();
}

function traced(mesh: Mesh, request: MatrixRequest & { via?: string }): TracedOutcome<RequestOutcome> {
  let result: TraceResult;
  try {
    result = traceRequest(mesh, request);
  } catch (error) {
    if (error instanceof TraceInputError)
      return {
        outcome: { verdict: 'failed', code: 0, where: error.message, summary: error.message },
        namespaces: [],
      };
    throw error;
  }
  const namespaces = new Set<string>();
  for (const hop of result.hops) {
    // Authorization is inbound only: the client's own outbound proxy meets no policy.
    if (hop.direction === 'inbound' || hop.decision !== 'none') namespaces.add(hop.namespace);
    if (hop.policy) namespaces.add(hop.policy.split('/')[0] ?? '');
    const next = hop.upstream ? mesh.workloadByIp.get(hop.upstream.split(':')[0] ?? '') : undefined;
    if (next) namespaces.add(next.namespace);
    const service = hop.cluster ? /\|([^|.]+)\.([^|.]+)\.svc\.[^|]*$/.exec(hop.cluster) : null;
    if (service?.[2]) namespaces.add(service[2]);
  }
  if (result.answeredBy) namespaces.add(result.answeredBy.split('/')[0] ?? '');
  const target = mesh.serviceByHostname.get(new URL(request.url).hostname);
  if (target) namespaces.add(target.namespace);
  return { outcome: outcomeOfTrace(result, request.from), namespaces: [...namespaces] };
}

/**
 * A proxy in words; the client's own outbound proxy is named as such, so that the outcomes of clients
 * that fail alike compare alike.
 */
function proxyName(hop: Hop, from: string): string {
  const name = `${hop.namespace}/${hop.workload}`;
  return name === from && hop.direction === 'outbound' ? `the client's ${hop.kind}` : `${hop.kind} ${name}`;
}

function outcomeOfTrace(result: TraceResult, from: string): RequestOutcome {
  const denied = result.hops.find((h) => h.decision === 'deny');
  if (denied)
    return {
      verdict: 'denied',
      code: result.response.code,
      where: `${proxyName(denied, from)}${denied.policy ? ` (${denied.policy})` : ''}`,
      ...(denied.kind === 'sidecar' && denied.direction === 'inbound'
        ? { refusedBy: `${denied.namespace}/${denied.workload}` }
        : {}),
      summary: result.summary,
    };
  if (result.answeredBy !== undefined)
    return {
      verdict: 'allowed',
      code: result.response.code,
      answeredBy: result.answeredBy,
      summary: result.summary,
    };
  const last = [...result.hops].reverse().find((h) => h.code !== undefined) ?? result.hops.at(-1);
  const flags = result.response.flags !== '-' ? ` ${result.response.flags}` : '';
  return {
    verdict: 'failed',
    code: result.response.code,
    where: last
      ? `${result.response.code}${flags} at ${proxyName(last, from)}`
      : `${result.response.code}${flags} (${result.summary})`,
    summary: result.summary,
  };
}

// ---- the matrix ----

/** A request without its client: what every client of the matrix sends. */
export type RequestShape = Omit<MatrixRequest, 'from'>;

/** Every request of the matrix, in a stable order (each client × each shape, then the external ones). */
export function requestMatrix(before: Mesh, after: Mesh): MatrixRequest[] {
  const { clients, shapes, external } = requestShapes(before, after);
  return [...clients.flatMap((from) => shapes.map((shape) => ({ from, ...shape }))), ...external];
}

/**
 * The matrix as clients × request shapes (addressed to Services, and `pods`: addressed to each workload's
 * pod on the ports its Services send to), and the requests of the external client.
 */
export function requestShapes(
  before: Mesh,
  after: Mesh,
): { clients: string[]; shapes: RequestShape[]; pods: RequestShape[]; external: MatrixRequest[] } {
  const clients = clientsOf(before, after);
  const pathsByNamespace = new Map<string, string[]>();
  const allPaths = new Set<string>(['/']);
  for (const mesh of [before, after])
    for (const [ns, paths] of mentionedPaths(mesh.snapshot)) {
      const set = new Set(pathsByNamespace.get(ns) ?? ['/']);
      for (const p of paths) set.add(p);
      pathsByNamespace.set(ns, [...set].sort().slice(0, maxPathsPerNamespace));
      for (const p of paths) allPaths.add(p);
    }
  const variants = requestVariants([before.snapshot, after.snapshot]);
  const root = before.config.rootNamespace;
  const shapes: RequestShape[] = [];
  for (const target of serviceTargets(before, after)) {
    const paths = new Set([
      ...(pathsByNamespace.get(target.namespace) ?? ['/']),
      ...(pathsByNamespace.get(root) ?? []),
    ]);
    for (const path of [...paths].sort())
      for (const v of variants)
        shapes.push({ url: `http://${target.authority}${path}`, method: v.method, headers: v.headers });
  }
  const external: MatrixRequest[] = [];
  // Outside clients come in as the configuration before admits them, and keep coming in that way.
  const entry = outsideEntry(before).portForward ? { portForward: true } : {};
  const ingressPaths = [...allPaths].sort().slice(0, maxPathsPerNamespace * 4);
  for (const host of ingressHosts([before, after]))
    for (const path of ingressPaths)
      for (const v of variants)
        external.push({
          from: 'external',
          url: `http://${host}${path}`,
          method: v.method,
          headers: v.headers,
          ...entry,
        });
  const pods: RequestShape[] = [];
  for (const target of podTargets(before, after))
    for (const v of variants)
      pods.push({
        url: `http://${target.authority}/`,
        method: v.method,
        headers: v.headers,
        pod: target.pod,
      });
  return { clients, shapes, pods, external };
}

/**
 * Every workload's pod (one per workload present in both configurations) at each port a Service sends
 * it HTTP on: `ip:port` of the first configuration. Requests to it skip the Service, and so whatever
 * serves only Services (a waypoint for `service` traffic).
 */
function podTargets(before: Mesh, after: Mesh): { pod: string; authority: string }[] {
  const out = new Map<string, { pod: string; authority: string }>();
  for (const mesh of [before, after])
    for (const s of mesh.services) {
      if (s.type === 'ExternalName' || s.type === 'ServiceEntry') continue;
      for (const port of s.ports) {
        if (!isHttpProtocol(port.protocol) && port.protocol !== Protocol.Unsupported) continue;
        for (const endpoint of s.endpoints) {
          const w = endpoint.workload;
          if (!w || !isClient(w)) continue;
          const name = `${w.namespace}/${w.name}`;
          const first = before.workloadByName.get(name);
          if (!first || !after.workloadByName.has(name)) continue;
          const authority = `${first.ip}:${endpoint.portFor(port)}`;
          out.set(`${name}|${authority}`, { pod: name, authority });
        }
      }
    }
  return [...out.values()].sort((a, b) =>
    a.pod < b.pod
      ? -1
      : a.pod > b.pod
        ? 1
        : a.authority < b.authority
          ? -1
          : a.authority > b.authority
            ? 1
            : 0,
  );
}

/** One client per namespace, service account, proxy and labels, present in both configurations. */
function clientsOf(before: Mesh, after: Mesh): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [name, w] of [...before.workloadByName].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!isClient(w) || !after.workloadByName.has(name)) continue;
    const key = `${w.namespace}|${w.serviceAccount}|${w.proxy}|${JSON.stringify(
      Object.entries(w.labels)
        .filter(([k]) => !k.includes('pod-template-hash'))
        .sort(),
    )}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(name);
  }
  return out;
}

/** A workload that sends and answers requests as an application (no gateway, waypoint or ztunnel). */
function isClient(w: Workload): boolean {
  return w.proxy !== 'gateway' && w.proxy !== 'waypoint' && w.proxy !== 'ztunnel';
}

/** `host:port` of every HTTP Service port of either configuration (ExternalName Services: port 80). */
function serviceTargets(before: Mesh, after: Mesh): { namespace: string; authority: string }[] {
  const out = new Map<string, { namespace: string; authority: string }>();
  for (const mesh of [before, after])
    for (const s of mesh.services) {
      // A ServiceEntry's host is outside what the ambient model answers (docs/semantics.md, ServiceEntry).
      if (s.type === 'ServiceEntry') continue;
      const ports =
        s.type === 'ExternalName'
          ? [80]
          : s.ports
              .filter((p) => isHttpProtocol(p.protocol) || p.protocol === Protocol.Unsupported)
              .map((p) => p.port);
      for (const port of ports) {
        const authority = port === 80 ? s.hostname : `${s.hostname}:${port}`;
        out.set(authority, { namespace: s.namespace, authority });
      }
    }
  return [...out.values()].sort((a, b) => (a.authority < b.authority ? -1 : 1));
}

/** Hosts the ingress routes: route hosts bound to gateways, and a stand-in host where a route takes any host. */
function ingressHosts(meshes: readonly Mesh[]): string[] {
  const hosts = new Set<string>();
  for (const mesh of meshes) {
    for (const vs of mesh.virtualServices) {
      if (vs.gateways.every((g) => g === 'mesh')) continue;
      for (const h of vs.hosts) {
        if (h === '*') hosts.add(AnyIngressHost);
        else if (!h.includes('*') && !h.endsWith(`.svc.${mesh.clusterDomain}`)) hosts.add(h);
      }
    }
    for (const route of mesh.snapshot.list(GroupKind.HTTPRoute)) {
      const spec = specOf(route, 'gateway.networking.k8s.io/HTTPRoute');
      if (!(spec.parentRefs ?? []).some((p) => (p.kind ?? 'Gateway') === 'Gateway')) continue;
      const names = spec.hostnames ?? [];
      if (names.length === 0) hosts.add(AnyIngressHost);
      for (const h of names) if (!h.includes('*')) hosts.add(h);
    }
  }
  return [...hosts].sort();
}

/** The paths routes and policies mention, made concrete (`/dex/*` → `/dex/x`), by namespace. */
function mentionedPaths(snapshot: Snapshot): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (ns: string, path: string | undefined) => {
    if (path === undefined || (!path.startsWith('/') && !path.startsWith('*'))) return;
    const concrete = path.replace(/^\*/, '/x').replace(/\*\*$/, 'x/y').replace(/\*$/, 'x');
    if (concrete.includes('*')) return;
    const set = out.get(ns) ?? new Set<string>();
    set.add(concrete);
    out.set(ns, set);
  };
  for (const vs of snapshot.list(GroupKind.VirtualService))
    for (const rule of specOf(vs, 'networking.istio.io/VirtualService').http ?? [])
      for (const m of rule.match ?? []) {
        if (m.uri) add(vs.metadata.namespace ?? 'default', m.uri.prefix ?? m.uri.exact);
      }
  for (const route of snapshot.list(GroupKind.HTTPRoute))
    for (const rule of specOf(route, 'gateway.networking.k8s.io/HTTPRoute').rules ?? [])
      for (const m of rule.matches ?? []) {
        if (m.path && m.path.type !== 'RegularExpression')
          add(route.metadata.namespace ?? 'default', m.path.value);
      }
  for (const policy of snapshot.list(GroupKind.AuthorizationPolicy))
    for (const rule of policySpec(policy).rules ?? [])
      for (const to of rule.to ?? [])
        for (const p of [...(to.operation?.paths ?? []), ...(to.operation?.notPaths ?? [])])
          add(policy.metadata.namespace ?? 'default', p);
  return out;
}
