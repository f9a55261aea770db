/**
 * The console graph's layout: layered by role, banded by namespace. Each namespace is a band (a box on the
 * page); inside it the nodes stand in columns by what they do in the traffic: workloads that only send,
 * gateways, waypoints, then workloads that answer. The nodes outside the mesh (the external client,
 * PassthroughCluster, BlackHoleCluster) have a band of their own, first. Bands are packed in rows to about
 * the shape of a screen.
 *
 * A general layered layout (dagre) takes about 13 s for 2,000 nodes in a browser's JavaScript; this one is
 * linear after sorting and gives the same picture for the same graph, so a larger mesh still opens at once.
 */
import type { GraphNode } from './wire.ts';

/** A node as the layout sees it: a graph node, or a namespace folded into one (kind `namespace`). */
type LayoutNode = Omit<GraphNode, 'kind'> & { kind: GraphNode['kind'] | 'namespace' };

export interface Position {
  x: number;
  y: number;
}

export interface Band {
  /** The namespace, or '' for the band of what is outside the mesh. */
  namespace: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Layout {
  positions: Map<string, Position>;
  bands: Band[];
}

/** Distance between node centres, the most nodes one column holds before it wraps, the room between bands. */
export const Spacing = { column: 170, row: 56, gap: 110, perColumn: 8 } as const;

/** The shape the bands are packed into: about this much wider than tall, like a screen. */
const aspect = 1.6;

const roles = ['sender', 'gateway', 'waypoint', 'answering', 'outside'] as const;
type Role = (typeof roles)[number];

function roleOf(node: LayoutNode, answers: ReadonlySet<string>): Role {
  switch (node.kind) {
    case 'gateway':
      return 'gateway';
    case 'waypoint':
      return 'waypoint';
    case 'workload':
      return answers.has(node.id) ? 'answering' : 'sender';
    default:
      return 'outside';
  }
}

/** One band's nodes placed from (0, 0): columns by role, left to right, each wrapping after `perColumn`. */
function placeBand(nodes: readonly LayoutNode[], answers: ReadonlySet<string>) {
  const byRole = new Map<Role, LayoutNode[]>();
  for (const node of nodes) {
    const role = roleOf(node, answers);
    byRole.set(role, [...(byRole.get(role) ?? []), node]);
  }
  const local = new Map<string, Position>();
  let column = 0;
  let rows = 1;
  for (const role of roles) {
    const list = [...(byRole.get(role) ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    if (list.length === 0) continue;
    const wraps = Math.ceil(list.length / Spacing.perColumn);
    const perColumn = Math.ceil(list.length / wraps);
    list.forEach((node, i) =>
      local.set(node.id, {
        x: (column + Math.floor(i / perColumn)) * Spacing.column,
        y: (i % perColumn) * Spacing.row,
      }),
    );
    column += wraps;
    rows = Math.max(rows, perColumn);
  }
  return { local, width: (column - 1) * Spacing.column, height: (rows - 1) * Spacing.row };
}

/** Positions for every node of the graph, and the namespace bands around them. */
export function layeredLayout(
  graph: {
    nodes: readonly LayoutNode[];
    edges: readonly { source: string; target: string }[];
  },
  /** The room between bands (folded namespaces want more: their edges carry labels). */
  gap: number = Spacing.gap,
): Layout {
  const answers = new Set(graph.edges.map((e) => e.target));
  const byBand = new Map<string, LayoutNode[]>();
  for (const node of graph.nodes) {
    const band = node.namespace ?? '';
    byBand.set(band, [...(byBand.get(band) ?? []), node]);
  }
  // The band outside the mesh first, then the namespaces by name.
  const order = [...byBand.keys()].sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b)));
  const placed = order.map((namespace) => ({
    namespace,
    ...placeBand(byBand.get(namespace) as LayoutNode[], answers),
  }));
  // Shelves: bands left to right until the row is as wide as the packing should be, then a new row.
  const area = placed.reduce((sum, b) => sum + (b.width + gap) * (b.height + gap), 0);
  const rowWidth = Math.max(...placed.map((b) => b.width), Math.sqrt(area * aspect));
  const positions = new Map<string, Position>();
  const bands: Band[] = [];
  let x = 0;
  let y = 0;
  let shelf = 0;
  for (const b of placed) {
    if (x > 0 && x + b.width > rowWidth) {
      x = 0;
      y += shelf + gap;
      shelf = 0;
    }
    for (const [id, p] of b.local) positions.set(id, { x: x + p.x, y: y + p.y });
    bands.push({ namespace: b.namespace, x, y, width: b.width, height: b.height });
    x += b.width + gap + Spacing.column / 2;
    shelf = Math.max(shelf, b.height);
  }
  return { positions, bands };
}
