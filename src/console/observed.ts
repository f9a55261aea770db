/**
 * Observed traffic on the console's graph: `kfmesh explain`'s report of the metrics the console was given,
 * as edges between the graph's nodes. A series is an edge from its source workload to its destination
 * workload (PassthroughCluster or BlackHoleCluster when the mesh reported those as the destination
 * service; `unknown` when it names none), as Kiali draws it. An edge counts one reporter's requests: the
 * client's where it reported any, else the server's (both report the same requests). Each series keeps
 * its explanation: the trace and finding, or the labels on which the nearest trace differs (drift).
 */
import type { Sample } from '../load/exposition.ts';
import { describeRef } from '../model/object.ts';
import type { Finding } from '../model/finding.ts';
import { kubectlPatch } from '../analyze/patches.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { ConnectionsMetric, explainMetrics, type ObservedSeries } from '../explain/explain.ts';
import { BlackHoleNode, ExternalNode, PassthroughNode } from './graph.ts';
import type { GraphNode, ObservedEdge, ObservedGraph, ObservedSeriesView } from './wire.ts';

/** Metrics the console was given, and where from. */
export interface ObservedInput {
  samples: readonly Sample[];
  /** Where they came from (a file, or a Prometheus server and its queries). */
  source: string;
  /** The window the counts cover, in seconds, when known. */
  seconds?: number;
  /** How a series' place is named: a file's `line`, or a query's `result`. */
  unit: 'line' | 'result';
}

/** The labels a series view keeps: what tells one series over an edge from another. */
const shownLabels = [
  'reporter',
  'destination_service',
  'response_code',
  'response_flags',
  'connection_security_policy',
  'source_principal',
  'destination_principal',
];

const unknown = 'unknown';
const UnknownNode = 'unknown';

/** The observed graph of the metrics, explained against the mesh and the analyzer's findings. */
export function observedGraph(mesh: Mesh, findings: readonly Finding[], input: ObservedInput): ObservedGraph {
  const report = explainMetrics(mesh, findings, input.samples);
  const edges = new Map<string, ObservedEdge>();
  const rate = (value: number) => (input.seconds ? { rate: value / input.seconds } : {});
  const add = (
    series: ObservedSeries,
    view: Omit<ObservedSeriesView, 'metric' | 'reporter' | 'value' | 'labels' | 'at'>,
  ) => {
    const source = sourceNode(series.labels);
    const target = targetNode(series.labels);
    const key = `${source}\u0000${target}`;
    let edge = edges.get(key);
    if (!edge) {
      edge = { source, target, requests: 0, codes: {}, connections: 0, drift: 0, series: [] };
      edges.set(key, edge);
    }
    edge.series.push({
      metric: series.metric,
      reporter: series.labels['reporter'] ?? unknown,
      value: series.value,
      ...rate(series.value),
      labels: Object.fromEntries(
        shownLabels.flatMap((l) => (series.labels[l] === undefined ? [] : [[l, series.labels[l] as string]])),
      ),
      at: `${input.unit} ${series.line}`,
      ...view,
    });
    if (view.status === 'drift') edge.drift++;
  };
  for (const cause of report.causes)
    for (const series of cause.series)
      add(series, {
        status: 'explained',
        request: series.request,
        summary: series.trace.summary,
        ...(cause.finding ? { finding: findingView(cause.finding) } : {}),
      });
  for (const series of report.drift)
    add(series, {
      status: 'drift',
      ...(series.nearest
        ? {
            request: series.nearest.request,
            summary: series.nearest.trace.summary,
            differences: series.nearest.differences.map(
              (d) => `${d.label}: ${d.observed}, configuration: ${d.configured}`,
            ),
          }
        : { differences: ['no trace of this client to this destination reports this metric'] }),
    });
  for (const series of report.untraced) add(series, { status: 'untraced', reason: series.reason });
  for (const edge of edges.values()) {
    count(edge);
    Object.assign(edge, rate(edge.requests > 0 ? edge.requests : edge.connections));
    edge.series.sort((a, b) => b.value - a.value || a.at.localeCompare(b.at));
  }
  const known = new Set(mesh.workloads.map((w) => `${w.namespace}/${w.name}`));
  const nodes = new Map<string, GraphNode>();
  for (const edge of edges.values())
    for (const id of [edge.source, edge.target]) if (!known.has(id)) nodes.set(id, nodeOf(id));
  const summary = {
    explained: report.causes.reduce((n, c) => n + c.series.length, 0),
    drift: report.drift.length,
    untraced: report.untraced.length,
  };
  return {
    source: input.source,
    ...(input.seconds ? { seconds: input.seconds } : {}),
    edges: [...edges.values()].sort(
      (a, b) => a.source.localeCompare(b.source) || a.target.localeCompare(b.target),
    ),
    nodes: [...nodes.values()].sort((a, b) => a.id.localeCompare(b.id)),
    summary,
  };
}

/** The edge's totals from one reporter's series: the client's where it reported, else the server's. */
function count(edge: ObservedEdge): void {
  for (const metric of ['http', 'tcp'] as const) {
    const of = edge.series.filter((s) => (s.metric === ConnectionsMetric) === (metric === 'tcp'));
    const reporter = of.some((s) => s.reporter === 'source') ? 'source' : 'destination';
    for (const s of of.filter((x) => x.reporter === reporter)) {
      if (metric === 'tcp') {
        edge.connections += s.value;
        continue;
      }
      edge.requests += s.value;
      const code = s.labels['response_code'] ?? '';
      const bucket = /^[2-5][0-9][0-9]$/.test(code) ? `${code[0]}xx` : 'other';
      edge.codes[bucket] = (edge.codes[bucket] ?? 0) + s.value;
    }
  }
}

function sourceNode(labels: Readonly<Record<string, string>>): string {
  const namespace = labels['source_workload_namespace'];
  const name = labels['source_workload'];
  return namespace && name && namespace !== unknown && name !== unknown
    ? `${namespace}/${name}`
    : ExternalNode;
}

function targetNode(labels: Readonly<Record<string, string>>): string {
  const service = labels['destination_service_name'];
  if (service === PassthroughNode || service === BlackHoleNode) return service;
  const namespace = labels['destination_workload_namespace'];
  const name = labels['destination_workload'];
  return namespace && name && namespace !== unknown && name !== unknown
    ? `${namespace}/${name}`
    : UnknownNode;
}

function nodeOf(id: string): GraphNode {
  if (id === PassthroughNode) return { id, kind: 'passthrough', name: id };
  if (id === BlackHoleNode) return { id, kind: 'blackhole', name: id };
  if (id === ExternalNode || id === UnknownNode) return { id, kind: 'external', name: id };
  const [namespace = '', name = ''] = id.split('/');
  return { id, kind: 'workload', namespace, name };
}

function findingView(f: Finding): NonNullable<ObservedSeriesView['finding']> {
  return {
    code: f.code,
    object: describeRef(f.object),
    ...(f.field ? { field: f.field } : {}),
    message: f.message,
    ...(f.fix ? { fix: f.fix } : {}),
    ...(f.patch ? { patch: kubectlPatch(f) } : {}),
  };
}
