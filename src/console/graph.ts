/**
 * The mesh as a graph, from traced traffic: each request is traced, and its path becomes a chain of
 * nodes (the client, each gateway or waypoint it crosses, then the workload that answered, or
 * `PassthroughCluster` when it left the mesh, `BlackHoleCluster` when it was dropped, or the proxy that
 * denied or failed it). Edges count the requests that took them, and how their requests ended. Ztunnel is
 * node-local plumbing: it carries traffic between the nodes but is not one of them.
 */
import { at } from '../model/checked.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { Snapshot } from '../load/snapshot.ts';
import { migrateToAmbient } from '../ambient/migrate.ts';
import { traceRequest } from '../mesh/trace.ts';
import { requestShapes, type MatrixRequest, type RequestShape } from '../verify/equivalence.ts';
import type { Hop, TraceResult } from '../model/trace-result.ts';
import type { EdgeCounts, GraphEdge, GraphNode, MeshGraph, SideBySide } from './wire.ts';
import { TraceInputError } from '../mesh/trace/request.ts';
import type { Mesh } from '../mesh/compiled.ts';

export const PassthroughNode = 'PassthroughCluster';
export const BlackHoleNode = 'BlackHoleCluster';
export const ExternalNode = 'external';

type Verdict = 'allowed' | 'denied' | 'failed';

function emptyCounts(): EdgeCounts {
  return { requests: 0, allowed: 0, denied: 0, failed: 0, passthrough: 0, blackhole: 0, mtls: 0 };
}

/** The graph of the requests' traces (sorted nodes and edges: the same input gives the same graph). */
export function meshGraph(mesh: Mesh, requests: readonly MatrixRequest[]): MeshGraph {
  const nodes = new Map<string, GraphNode>();
  const edges = new Map<string, GraphEdge>();
  const totals = { ...emptyCounts(), untraceable: 0 };
  for (const request of requests) {
    let result: TraceResult;
    try {
      result = traceRequest(mesh, request);
    } catch (error) {
      if (!(error instanceof TraceInputError)) throw error;
      totals.untraceable++;
      continue;
    }
    const path = pathOf(result, request.from);
    const verdict: Verdict = result.hops.some((h) => h.decision === 'deny')
      ? 'denied'
      : result.answeredBy !== undefined
        ? 'allowed'
        : 'failed';
    const end = path.at(-1)?.node.kind;
    const add = (counts: EdgeCounts, mtls: boolean) => {
      counts.requests++;
      counts[verdict]++;
      if (end === 'passthrough') counts.passthrough++;
      if (end === 'blackhole') counts.blackhole++;
      if (mtls) counts.mtls++;
    };
    add(
      totals,
      path.some((s) => s.mtls),
    );
    for (const step of path) nodes.set(step.node.id, step.node);
    for (let i = 1; i < path.length; i++) {
      const from = at(path, i - 1);
      const to = at(path, i);
      const key = `${from.node.id}\u0000${to.node.id}`;
      let edge = edges.get(key);
      if (!edge) edges.set(key, (edge = { source: from.node.id, target: to.node.id, ...emptyCounts() }));
      add(edge, to.mtls);
      if (to.deniedBy !== undefined) edge.deniedBy = to.deniedBy;
    }
  }
  return {
    nodes: [...nodes.values()].sort((a, b) => a.id.localeCompare(b.id)),
    edges: [...edges.values()].sort(
      (a, b) => a.source.localeCompare(b.source) || a.target.localeCompare(b.target),
    ),
    totals,
  };
}

/** The ids of the graph nodes a traced request went through, in order (as the graph draws its path). */
export function tracePath(result: TraceResult): string[] {
  return pathOf(result, result.request.from).map((s) => s.node.id);
}

/** A node on a request's path, whether the connection into it was mutual TLS, and a denial on entering. */
interface Step {
  node: GraphNode;
  mtls: boolean;
  deniedBy?: string;
}

/** The chain of nodes a traced request went through. */
function pathOf(result: TraceResult, from: string): Step[] {
  const path: Step[] = [{ node: clientNode(from), mtls: false }];
  const last = () => path.at(-1) as Step;
  let mtls = false;
  for (const hop of result.hops) {
    if (hop.kind !== 'ztunnel') {
      const node = proxyNode(hop);
      if (node.id !== last().node.id) path.push({ node, mtls });
    }
    if (hop.decision === 'deny') {
      // A ztunnel denies on behalf of the workload it delivers to: the denial is on entering that workload.
      const target =
        hop.kind === 'ztunnel' && hop.direction === 'inbound' ? workloadNode(hop) : proxyNode(hop);
      if (target.id !== last().node.id) path.push({ node: target, mtls });
      last().deniedBy = hop.policy ?? `${hop.kind} ${hop.namespace}/${hop.workload}`;
      return path;
    }
    mtls = hop.mtls;
    if (hop.cluster === PassthroughNode || hop.cluster === BlackHoleNode) {
      const kind = hop.cluster === PassthroughNode ? 'passthrough' : 'blackhole';
      path.push({ node: { id: hop.cluster, kind, name: hop.cluster }, mtls: false });
      return path;
    }
  }
  if (result.answeredBy !== undefined) {
    const [namespace, name] = result.answeredBy.includes('/')
      ? (result.answeredBy.split('/') as [string, string])
      : [undefined, result.answeredBy];
    const node: GraphNode = namespace
      ? { id: result.answeredBy, kind: 'workload', namespace, name }
      : { id: PassthroughNode, kind: 'passthrough', name: PassthroughNode };
    if (node.id !== last().node.id) path.push({ node, mtls });
  }
  return path;
}

function clientNode(from: string): GraphNode {
  if (from === ExternalNode) return { id: ExternalNode, kind: 'external', name: 'external' };
  const [namespace = '', name = ''] = from.split('/');
  return { id: from, kind: 'workload', namespace, name };
}

function proxyNode(hop: Hop): GraphNode {
  const kind = hop.kind === 'gateway' ? 'gateway' : hop.kind === 'waypoint' ? 'waypoint' : 'workload';
  return { id: `${hop.namespace}/${hop.workload}`, kind, namespace: hop.namespace, name: hop.workload };
}

/** The workload a ztunnel hop delivers to (named by its upstream), else the ztunnel's own namespace. */
function workloadNode(hop: Hop): GraphNode {
  const named = /\(([^/()]+)\/([^()]+)\)/.exec(hop.upstream ?? '');
  if (named?.[1] && named[2])
    return { id: `${named[1]}/${named[2]}`, kind: 'workload', namespace: named[1], name: named[2] };
  return proxyNode(hop);
}

/**
 * The most requests a graph is drawn from by default. The matrix grows with clients × services: a platform
 * of 2,000 workloads has millions of requests, so past this many the graph is drawn from an even sample.
 */
export const DefaultGraphBudget = 60_000;

/**
 * Graphs of a sidecar-mode platform and of its migration to ambient mode, from one request matrix (the
 * equivalence check's: every client to every service, on the ports and paths the configurations name),
 * so that an edge present in one and not the other is a change in what the traffic does.
 */
export function sideBySide(
  snapshot: Snapshot,
  options: { clusterDomain?: string; budget?: number } = {},
): SideBySide {
  const domain = options.clusterDomain ? { clusterDomain: options.clusterDomain } : {};
  const sidecar = compileMesh(snapshot, domain);
  const migrated = migrateToAmbient(snapshot, domain).objects;
  const ambient = compileMesh(Snapshot.of(migrated, '<migrated>'), domain);
  return graphsOf(sidecar, ambient, options.budget);
}

/** The graphs of two compiled meshes (a platform in sidecar mode and in ambient mode), from one request matrix. */
export function graphsOf(sidecar: Mesh, ambient: Mesh, budget = DefaultGraphBudget): SideBySide {
  const { clients, shapes, external } = requestShapes(sidecar, ambient);
  const requests = sampleMatrix(clients, shapes, external, budget);
  return {
    sidecar: meshGraph(sidecar, requests),
    ambient: meshGraph(ambient, requests),
    requests: requests.length,
    matrix: clients.length * shapes.length + external.length,
  };
}

/**
 * The matrix (every client with every request shape, then the external client's requests) when it holds
 * at most `budget` requests; else an even sample of it: every client sends the same number of requests, to
 * shapes spread over the whole list, and together the clients send every shape (when the budget allows);
 * the external requests are sampled evenly. Deterministic.
 */
export function sampleMatrix(
  clients: readonly string[],
  shapes: readonly RequestShape[],
  external: readonly MatrixRequest[],
  budget: number,
): MatrixRequest[] {
  const total = clients.length * shapes.length + external.length;
  if (total <= budget)
    return [...clients.flatMap((from) => shapes.map((s) => ({ from, ...s }))), ...external];
  const spread = <T>(list: readonly T[], keep: number): T[] =>
    Array.from({ length: keep }, (_, t) => at(list, Math.floor((t * list.length) / keep)));
  const externalShare = Math.min(external.length, Math.floor(budget / 10));
  const perClient = Math.min(
    shapes.length,
    Math.max(1, Math.floor((budget - externalShare) / Math.max(1, clients.length))),
  );
  return [
    // Client c sends the shapes c, c + C, c + 2C, … (C clients): together the first C × perClient shapes
    // of the cycle, so every shape is sent once the sample holds as many requests as there are shapes.
    ...clients.flatMap((from, c) =>
      Array.from({ length: perClient }, (_, t) => ({
        from,
        ...at(shapes, (c + t * clients.length) % shapes.length),
      })),
    ),
    ...spread(external, externalShare),
  ];
}
