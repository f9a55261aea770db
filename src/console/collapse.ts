/**
 * The graph the console draws: the mesh graph with each namespace that is not expanded folded into one
 * node, its edges summed into one edge per pair of drawn nodes, and the observed traffic (if any) laid over
 * the same edges. The page opens with every namespace folded (a graph of namespaces); a namespace expanded
 * shows its workloads. Pure, so the page and the tests compute the same picture.
 */
import type { EdgeCounts, GraphEdge, GraphNode, MeshGraph, ObservedCounts, ObservedGraph } from './wire.ts';

/** A node on the page: a node of the mesh graph, or a namespace folded into one. */
export interface DrawnNode {
  id: string;
  kind: GraphNode['kind'] | 'namespace';
  namespace?: string;
  name: string;
  /** A folded namespace: how many of the graph's nodes it holds. */
  members?: number;
  /** A folded namespace: the requests between its own nodes (not drawn as edges). */
  inside?: number;
  /** A folded namespace: the requests and connections observed between its own nodes. */
  observedInside?: number;
}

/** An edge on the page: the graph's edges between two drawn nodes, summed, and the traffic observed over them. */
export interface DrawnEdge extends GraphEdge {
  /** Indices (in the mesh graph's edges) of the edges it stands for. */
  memberEdges: number[];
  /** Indices (in the observed graph's edges) of the observed edges it stands for. */
  observedEdges: number[];
  /** What the mesh reported over it, summed. */
  observed?: ObservedCounts & { rate?: number };
  /** Observed, but no request of the configuration takes it. */
  observedOnly: boolean;
}

export interface DrawnGraph {
  nodes: DrawnNode[];
  edges: DrawnEdge[];
}

/** Which namespaces show their workloads: a set of names, or all. */
export type Expanded = ReadonlySet<string> | 'all';

export function namespaceNodeId(namespace: string): string {
  return `namespace:${namespace}`;
}

/** A drawn node's id as people read it: `namespace ml-team` for a folded namespace, else the id (NS/NAME). */
export function nodeName(id: string): string {
  const prefix = namespaceNodeId('');
  return id.startsWith(prefix) ? `namespace ${id.slice(prefix.length)}` : id;
}

const counts: (keyof EdgeCounts)[] = [
  'requests',
  'allowed',
  'denied',
  'failed',
  'passthrough',
  'blackhole',
  'mtls',
];

// Why long: one pass each over the nodes, the graph's edges and the observed edges, folding each the same way.
/** The drawn graph of a mesh graph (and the traffic observed on it), with the namespaces not expanded folded. */
export function drawnGraph(
  graph: MeshGraph,
  observed: ObservedGraph | undefined,
  expanded: Expanded,
): DrawnGraph {
  const isOpen = (namespace: string) => expanded === 'all' || expanded.has(namespace);
  const nodes = new Map<string, DrawnNode>();
  const drawnId = new Map<string, string>();
  const place = (node: GraphNode) => {
    if (drawnId.has(node.id)) return;
    const namespace = node.namespace;
    if (namespace === undefined || isOpen(namespace)) {
      drawnId.set(node.id, node.id);
      nodes.set(node.id, { ...node });
      return;
    }
    const id = namespaceNodeId(namespace);
    drawnId.set(node.id, id);
    const folded = nodes.get(id) ?? {
      id,
      kind: 'namespace',
      namespace,
      name: namespace,
      members: 0,
      inside: 0,
    };
    folded.members = (folded.members ?? 0) + 1;
    nodes.set(id, folded);
  };
  for (const node of graph.nodes) place(node);
  for (const node of observed?.nodes ?? []) place(node);
  const edges = new Map<string, DrawnEdge>();
  const edgeOf = (source: string, target: string, observedOnly: boolean): DrawnEdge => {
    const key = `${source}\u0000${target}`;
    let edge = edges.get(key);
    if (!edge) {
      edge = {
        source,
        target,
        requests: 0,
        allowed: 0,
        denied: 0,
        failed: 0,
        passthrough: 0,
        blackhole: 0,
        mtls: 0,
        memberEdges: [],
        observedEdges: [],
        observedOnly,
      };
      edges.set(key, edge);
    }
    return edge;
  };
  const ends = (e: { source: string; target: string }) =>
    [drawnId.get(e.source) ?? e.source, drawnId.get(e.target) ?? e.target] as const;
  graph.edges.forEach((e, i) => {
    const [source, target] = ends(e);
    if (source === target && source !== e.source) {
      const folded = nodes.get(source);
      if (folded) folded.inside = (folded.inside ?? 0) + e.requests;
      return;
    }
    const edge = edgeOf(source, target, false);
    for (const c of counts) edge[c] += e[c];
    edge.memberEdges.push(i);
    // A denial is named only where the drawn edge stands for one edge of the graph.
    if (edge.memberEdges.length === 1 && e.deniedBy !== undefined) edge.deniedBy = e.deniedBy;
    else delete edge.deniedBy;
  });
  observed?.edges.forEach((o, i) => {
    const [source, target] = ends(o);
    // Traffic observed inside a folded namespace shows on that namespace's node, not as an edge.
    if (source === target && source !== o.source) {
      const folded = nodes.get(source);
      if (folded) folded.observedInside = (folded.observedInside ?? 0) + o.requests + o.connections;
      return;
    }
    const edge = edgeOf(source, target, true);
    edge.observedEdges.push(i);
    const sum = edge.observed ?? { requests: 0, codes: {}, connections: 0, drift: 0 };
    sum.requests += o.requests;
    sum.connections += o.connections;
    sum.drift += o.drift;
    for (const [k, v] of Object.entries(o.codes)) sum.codes[k] = (sum.codes[k] ?? 0) + v;
    if (o.rate !== undefined) sum.rate = (sum.rate ?? 0) + o.rate;
    edge.observed = sum;
  });
  return {
    nodes: [...nodes.values()].sort((a, b) => a.id.localeCompare(b.id)),
    edges: [...edges.values()].sort(
      (a, b) => a.source.localeCompare(b.source) || a.target.localeCompare(b.target),
    ),
  };
}

/** The share of observed requests that failed: 4xx, 5xx, or no response at all. */
export function errorRatio(observed: ObservedCounts): number {
  if (observed.requests === 0) return 0;
  const failed = (observed.codes['4xx'] ?? 0) + (observed.codes['5xx'] ?? 0) + (observed.codes['other'] ?? 0);
  return failed / observed.requests;
}

/** A count or rate written short: 12, 1.2k, 3.4M; 0.25/s. */
export function shortNumber(n: number): string {
  if (n >= 1e6) return `${Number((n / 1e6).toPrecision(2))}M`;
  if (n >= 1e3) return `${Number((n / 1e3).toPrecision(2))}k`;
  return String(Number(n.toPrecision(2)));
}

/**
 * An edge's label: what was observed over it (rate or count, and the share that failed), else how many
 * of the simulated requests took it and how many were denied. The page shows it for the hovered or
 * selected edge, or for all with "Labels" on.
 */
export function edgeLabel(edge: DrawnEdge): string {
  const o = edge.observed;
  if (o) {
    const amount = o.requests > 0 ? o.requests : o.connections;
    const unit = o.requests > 0 ? 'req' : 'conn';
    const how = o.rate !== undefined ? `${shortNumber(o.rate)} ${unit}/s` : `${shortNumber(amount)} ${unit}`;
    const errors = o.requests > 0 ? ` · ${Math.round(errorRatio(o) * 100)}% err` : '';
    return `${how}${errors}${o.drift > 0 ? ' · drift' : ''}`;
  }
  const denied = edge.denied > 0 ? ` · ${edge.denied} denied` : '';
  return `${shortNumber(edge.requests)}${denied}`;
}
