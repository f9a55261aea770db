/**
 * `kfmesh explain`: what the mesh reported, traced back to the configuration (docs/semantics.md, Observed
 * telemetry). Each `istio_requests_total` or `istio_tcp_connections_opened_total` series names a client
 * (source workload) and a destination (destination service); kfmesh sends that client's requests to that
 * destination, and to the hosts whose VirtualServices route to it, through the simulator (HTTP: GET and
 * POST, to `/` and every path the host's VirtualServices match, on every port of the service; TCP: to
 * every port of the service; every weighted path) and looks
 * for a proxy's report with exactly the series' labels. A series one of them produces is explained by that
 * trace and grouped under the analyzer finding about the host that trace's request went to, if any; a series none produces is
 * drift: the cluster differs from this configuration, shown with the nearest trace and the labels that
 * differ.
 */
import type { Finding } from '../model/finding.ts';
import type { TelemetryRecord, TraceResult } from '../model/trace-result.ts';
import { seriesText, type Sample } from '../load/exposition.ts';
import { Snapshot } from '../load/snapshot.ts';
import { objectKey, refOf } from '../model/object.ts';
import { patched } from '../model/patch.ts';
import type { CompileOptions } from '../mesh/compiled.ts';
import { compileMesh } from '../mesh/mesh.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { traceAllPaths } from '../mesh/trace.ts';
import { TraceInputError, type TraceInput } from '../mesh/trace/request.ts';
import { resolveShortName } from '../mesh/virtual-services.ts';
import { ProxyKind } from '../mesh/workloads.ts';
import { requestShapes, type RequestShape } from '../verify/requests.ts';

/** The HTTP metric explain reads. */
export const RequestsMetric = 'istio_requests_total';
/** The TCP metric explain reads (a connection is TCP's request). */
export const ConnectionsMetric = 'istio_tcp_connections_opened_total';
/** The metrics explain reads; samples of others are counted and left alone. */
export const ExplainedMetrics: readonly string[] = [RequestsMetric, ConnectionsMetric];

/** A series as read, with where it was read. */
export interface ObservedSeries {
  metric: string;
  labels: Readonly<Record<string, string>>;
  value: number;
  line: number;
}

/** A series a trace of the configuration produces. */
export interface ExplainedSeries extends ObservedSeries {
  request: string;
  trace: TraceResult;
  /** The proxy whose report it is (`namespace/workload`). */
  proxy: string;
}

/** Series under one cause: an analyzer finding, or (without one) what the trace says happened. */
export interface Cause {
  finding?: Finding;
  /** The trace's summary when no finding applies. */
  summary: string;
  total: number;
  series: ExplainedSeries[];
}

/** A label on which the nearest trace's report differs from the series. */
export interface LabelDifference {
  label: string;
  observed: string;
  configured: string;
}

/** A series no trace of the configuration produces. */
export interface DriftSeries extends ObservedSeries {
  nearest?: { request: string; trace: TraceResult; differences: LabelDifference[] };
}

/** A series kfmesh cannot send a request for, and why. */
export interface UntracedSeries extends ObservedSeries {
  reason: string;
}

export interface ExplainReport {
  causes: Cause[];
  drift: DriftSeries[];
  untraced: UntracedSeries[];
  /** Samples of other metrics, left alone. */
  otherSamples: number;
}

/** Explains every `istio_requests_total` sample against the mesh compiled from the configuration. */
export function explainMetrics(
  mesh: Mesh,
  findings: readonly Finding[],
  samples: readonly Sample[],
): ExplainReport {
  const causes = new Map<string, Cause>();
  const drift: DriftSeries[] = [];
  const untraced: UntracedSeries[] = [];
  const tried = new Map<string, Traced[]>();
  const requests = samples.filter((s) => ExplainedMetrics.includes(s.name));
  // A gateway's report may belong to a request another client started (the gateway forwards it): series
  // of other clients are traced first, and their traces searched too.
  const viaGateway = (s: Sample) =>
    mesh.workloads.some(
      (w) =>
        w.proxy === ProxyKind.Gateway &&
        w.namespace === s.labels['source_workload_namespace'] &&
        w.name === s.labels['source_workload'],
    );
  const ordered = [...requests.filter((s) => !viaGateway(s)), ...requests.filter(viaGateway)];
  // The matrix is built on first need: not at all when no series can be traced.
  let byHost: Map<string, RequestShape[]> | undefined;
  const matrix = () => (byHost ??= matrixByHost(mesh));
  const index = new ReportIndex();
  for (const sample of ordered) {
    const series: ObservedSeries = {
      metric: sample.name,
      labels: sample.labels,
      value: sample.value,
      line: sample.line,
    };
    const candidates = candidateRequests(mesh, series, matrix);
    if (typeof candidates === 'string') {
      untraced.push({ ...series, reason: candidates });
      continue;
    }
    const key = JSON.stringify(candidates);
    let traces = tried.get(key);
    if (!traces) {
      traces = candidates.flatMap((input) => tracesOf(mesh, input));
      tried.set(key, traces);
      for (const t of traces) index.add(t);
    }
    // The series' own candidates first, then every trace so far (through the index of their reports).
    const match = findReport(series, [traces]) ?? index.find(series);
    if (!match) {
      const others = [...tried.values()].filter((p) => p !== traces);
      drift.push({ ...series, ...nearest(series, [traces, ...others]) });
      continue;
    }
    const explained: ExplainedSeries = {
      ...series,
      request: match.request,
      trace: match.trace,
      proxy: match.record.proxy,
    };
    const finding = findingAbout(findings, match.trace);
    const causeKey = finding
      ? `${finding.code}\u0000${JSON.stringify(finding.object)}\u0000${finding.field ?? ''}`
      : match.trace.summary;
    const cause = causes.get(causeKey) ?? {
      ...(finding ? { finding } : {}),
      summary: match.trace.summary,
      total: 0,
      series: [],
    };
    cause.total += series.value;
    cause.series.push(explained);
    causes.set(causeKey, cause);
  }
  const byTotal = (a: { total: number }, b: { total: number }) => b.total - a.total;
  return {
    causes: [...causes.values()].sort(
      (a, b) => byTotal(a, b) || (a.summary < b.summary ? -1 : a.summary > b.summary ? 1 : 0),
    ),
    drift: drift.sort((a, b) => b.value - a.value || a.line - b.line),
    untraced,
    otherSamples: samples.length - requests.length,
  };
}

const unknown = 'unknown';

/**
 * The requests of the equivalence check's matrix (the ports, paths, methods and headers the configuration
 * names) by the host they are sent to, and the external ones by the client they come through.
 */
function matrixByHost(mesh: Mesh): Map<string, RequestShape[]> {
  const byHost = new Map<string, RequestShape[]>();
  const { shapes, external } = requestShapes(mesh, mesh);
  for (const shape of [...shapes, ...external.map(({ from: _, ...shape }) => shape)]) {
    const host = hostOf(shape.url);
    const list = byHost.get(host);
    if (list) list.push(shape);
    else byHost.set(host, [shape]);
  }
  return byHost;
}

/** Most requests tried for one series (a host the matrix sends many variants to is sampled in order). */
const maxCandidates = 512;

/** The requests that could have produced the series, or why none can be sent. */
function candidateRequests(
  mesh: Mesh,
  series: ObservedSeries,
  matrix: () => ReadonlyMap<string, readonly RequestShape[]>,
): TraceInput[] | string {
  const namespace = series.labels['source_workload_namespace'];
  const name = series.labels['source_workload'];
  const destination = series.labels['destination_service'];
  // A host the mesh does not know is reported as the request's authority, its port included.
  const [host, port] = destination?.split(':') ?? [];
  if (!namespace || !name || namespace === unknown || name === unknown)
    return 'the series names no source workload: kfmesh cannot tell which client sent it';
  if (!host || host === unknown) return 'the series names no destination service';
  const client = mesh.workloads.find((w) => w.namespace === namespace && w.name === name);
  if (!client) return `source workload ${namespace}/${name} is not in the configuration`;
  const from =
    client.proxy === ProxyKind.Gateway
      ? { from: 'external', via: `${namespace}/${name}` }
      : { from: `${namespace}/${name}` };
  // A connection carries no path or method: one request to each port the destination serves.
  if (series.metric === ConnectionsMetric)
    return hostsRoutedTo(mesh, host)
      .flatMap((target) =>
        (port !== undefined ? [Number(port)] : portsFor(mesh, target)).map((p) => ({
          ...from,
          url: `http://${target}:${p}/`,
        })),
      )
      .slice(0, maxCandidates);
  // A service's requests go to each port it serves (a Kubeflow API on 8888); another host's to port 80.
  return hostsRoutedTo(mesh, host)
    .flatMap((target) => {
      const service = mesh.serviceByHostname.get(target);
      const ports = service?.ports.map((p) => p.port) ?? [];
      const authorities =
        port !== undefined
          ? [`${target}:${port}`]
          : ports.length > 0
            ? ports.map((p) => (p === 80 ? target : `${target}:${p}`)).sort()
            : [target];
      const own = authorities.flatMap((authority) =>
        pathsFor(mesh, target).flatMap((path) =>
          ['GET', 'POST'].map((method) => ({ ...from, url: `http://${authority}${path}`, method })),
        ),
      );
      const named = (matrix().get(target) ?? []).map((shape) => ({
        ...from,
        url: shape.url,
        method: shape.method,
        headers: shape.headers,
      }));
      return [...own, ...named];
    })
    .filter(unique())
    .slice(0, maxCandidates);
}

/** A filter that keeps the first of equal requests. */
function unique(): (input: TraceInput) => boolean {
  const seen = new Set<string>();
  return (input) => {
    const key = JSON.stringify([input.url, input.method, input.headers ?? {}]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
}

/**
 * Every report of the traces so far, by its exact label values: a series finds the report with all its
 * labels in one lookup (labels the series lacks: it is searched for report by report instead).
 */
class ReportIndex {
  readonly #keys = new Map<string, readonly string[]>();
  readonly #reports = new Map<string, Traced & { record: TelemetryRecord }>();
  readonly #all: Traced[] = [];

  add(traced: Traced): void {
    this.#all.push(traced);
    for (const record of traced.trace.telemetry) {
      let keys = this.#keys.get(record.metric);
      if (!keys) this.#keys.set(record.metric, (keys = Object.keys(record.labels).sort()));
      const key = this.#key(record.metric, keys, record.labels);
      if (key !== undefined && !this.#reports.has(key)) this.#reports.set(key, { ...traced, record });
    }
  }

  find(series: ObservedSeries): (Traced & { record: TelemetryRecord }) | undefined {
    const keys = this.#keys.get(series.metric);
    if (!keys) return undefined;
    const key = this.#key(series.metric, keys, series.labels);
    return key !== undefined ? this.#reports.get(key) : findReport(series, [this.#all]);
  }

  /** The metric and the values of its labels, in order; undefined when one is missing. */
  #key(
    metric: string,
    keys: readonly string[],
    labels: Readonly<Record<string, string>>,
  ): string | undefined {
    const values: string[] = [metric];
    for (const k of keys) {
      const v = labels[k];
      if (v === undefined) return undefined;
      values.push(v);
    }
    return JSON.stringify(values);
  }
}

/** The ports of the service of that host; a host of no service or a service of no ports: 80 and 443. */
function portsFor(mesh: Mesh, host: string): number[] {
  const ports = mesh.serviceByHostname.get(host)?.ports.map((p) => p.port) ?? [];
  return ports.length > 0 ? ports.sort((a, b) => a - b) : [80, 443];
}

const maxHosts = 16;

/**
 * The hosts a client may have called to reach the destination service: the service itself, and the hosts
 * of VirtualServices that route to it (a model's host that its route sends to KServe's local gateway).
 */
function hostsRoutedTo(mesh: Mesh, destination: string): string[] {
  const hosts = new Set<string>([destination]);
  for (const vs of mesh.virtualServices)
    for (const rule of vs.http)
      for (const route of rule.route ?? [])
        if (resolveShortName(route.destination.host, vs.namespace, mesh.clusterDomain) === destination)
          for (const host of vs.hosts) if (!host.includes('*')) hosts.add(host);
  return [destination, ...[...hosts].filter((h) => h !== destination).sort()].slice(0, maxHosts);
}

const maxPaths = 16;

/** `/` and the paths the host's VirtualServices match (exact paths and prefixes). */
function pathsFor(mesh: Mesh, host: string): string[] {
  const paths = new Set<string>(['/']);
  for (const vs of mesh.virtualServices) {
    if (!vs.hosts.includes(host)) continue;
    for (const rule of vs.http)
      for (const match of rule.match ?? []) {
        const path = match.uri?.exact ?? match.uri?.prefix ?? match.uri?.pathSeparatedPrefix;
        if (path !== undefined && path.startsWith('/')) paths.add(path);
      }
  }
  return [...paths].sort().slice(0, maxPaths);
}

/** A traced request, as written for people. */
interface Traced {
  request: string;
  trace: TraceResult;
}

/** The first report with exactly the series' labels, in the order of the lists. */
function findReport(
  series: ObservedSeries,
  lists: readonly (readonly Traced[])[],
): (Traced & { record: TelemetryRecord }) | undefined {
  for (const list of lists)
    for (const { request, trace } of list)
      for (const record of trace.telemetry)
        if (record.metric === series.metric && differences(series, record).length === 0)
          return { request, trace, record };
  return undefined;
}

function tracesOf(mesh: Mesh, input: TraceInput): Traced[] {
  const request = `${input.method ?? 'GET'} ${input.url} from ${input.from}${input.via ? ` via ${input.via}` : ''}`;
  try {
    return traceAllPaths(mesh, input).map((trace) => ({ request, trace }));
  } catch (error) {
    if (error instanceof TraceInputError) return [];
    throw error;
  }
}

/** The labels a report gives that differ from the series (only labels both have count). */
function differences(series: ObservedSeries, record: TelemetryRecord): LabelDifference[] {
  const out: LabelDifference[] = [];
  for (const [label, configured] of Object.entries(record.labels)) {
    const observed = series.labels[label];
    if (observed !== undefined && observed !== configured) out.push({ label, observed, configured });
  }
  return out;
}

/** The report of the same metric that differs from the series on the fewest labels. */
function nearest(
  series: ObservedSeries,
  lists: readonly (readonly Traced[])[],
): Pick<DriftSeries, 'nearest'> {
  let best: DriftSeries['nearest'];
  for (const list of lists)
    for (const { request, trace } of list)
      for (const record of trace.telemetry) {
        if (record.metric !== series.metric) continue;
        const diff = differences(series, record);
        if (!best || diff.length < best.differences.length) best = { request, trace, differences: diff };
      }
  return best ? { nearest: best } : {};
}

/**
 * The analyzer finding about the host the traced request was sent to (the origin of the chain of proxies
 * that reported the series): its message or evidence names the host. Infos are left out.
 */
function findingAbout(findings: readonly Finding[], trace: TraceResult): Finding | undefined {
  const host = hostOf(trace.request.url);
  return findings.find(
    (f) =>
      f.severity !== 'info' && (f.message.includes(host) || (f.evidence ?? []).some((e) => e.includes(host))),
  );
}

function hostOf(url: string): string {
  return /^[a-z]+:\/\/([^/:]+)/i.exec(url)?.[1] ?? url;
}

/** What changed between two windows of metrics, and which finding's fix accounts for it. */
export interface ChangeReport {
  before: ExplainReport;
  after: ExplainReport;
  /** Series of the first window absent from the second. */
  gone: ObservedSeries[];
  /** Series of the second window absent from the first. */
  appeared: ObservedSeries[];
  /** Findings of the first window whose patch makes the configuration produce series of the second that it could not. */
  fixes: { finding: Finding; produces: ObservedSeries[] }[];
}

/**
 * Explains two windows against one configuration (the one of the first window). A series of the second
 * window that the configuration cannot produce is tried against the configuration with each patch of the
 * first window's findings applied: the patch that produces it is the change the second window shows.
 */
export function explainChange(
  snapshot: Snapshot,
  options: CompileOptions,
  findings: readonly Finding[],
  before: readonly Sample[],
  after: readonly Sample[],
): ChangeReport {
  const mesh = compileMesh(snapshot, options);
  const first = explainMetrics(mesh, findings, before);
  const second = explainMetrics(mesh, findings, after);
  const key = (s: Pick<Sample, 'name' | 'labels'>) => seriesText(s);
  const inBefore = new Set(before.map(key));
  const inAfter = new Set(after.map(key));
  const asSeries = (s: Sample): ObservedSeries => ({
    metric: s.name,
    labels: s.labels,
    value: s.value,
    line: s.line,
  });
  const unexplained = after.filter((s) => second.drift.some((d) => d.line === s.line));
  const fixes: ChangeReport['fixes'] = [];
  for (const cause of first.causes) {
    const finding = cause.finding;
    if (!finding?.patch || unexplained.length === 0) continue;
    const fixed = withFix(snapshot, finding);
    if (!fixed) continue;
    const report = explainMetrics(compileMesh(fixed, options), [], unexplained);
    const produces = report.causes
      .flatMap((c) => c.series)
      .map(({ metric, labels, value, line }) => ({ metric, labels, value, line }));
    if (produces.length > 0) fixes.push({ finding, produces: produces.sort((a, b) => a.line - b.line) });
  }
  return {
    before: first,
    after: second,
    gone: before.filter((s) => ExplainedMetrics.includes(s.name) && !inAfter.has(key(s))).map(asSeries),
    appeared: after.filter((s) => ExplainedMetrics.includes(s.name) && !inBefore.has(key(s))).map(asSeries),
    fixes,
  };
}

/** The configuration with a finding's patch applied to its object (none when the object is not in it). */
function withFix(snapshot: Snapshot, finding: Finding): Snapshot | undefined {
  const target = objectKey(finding.object);
  let found = false;
  const objects = snapshot.all().map((o) => {
    if (objectKey(refOf(o)) !== target) return o;
    found = true;
    return patched(o, finding.patch ?? []);
  });
  return found ? Snapshot.of(objects) : undefined;
}
