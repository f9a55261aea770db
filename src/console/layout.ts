/**
 * The console graph's layout: a map of the platform on a grid, with every edge routed along the empty
 * channels between the grid's cells, so that no edge passes through a node that is not one of its ends.
 *
 * Rows of the map by role, top to bottom: what is outside the mesh and the namespaces that hold an ingress
 * gateway; the platform's namespaces; the users' namespaces (Profiles). Each namespace is a block of cells:
 * one cell when it is folded, a grid of its workloads when it is unfolded (gateways, waypoints, workloads
 * that send, workloads that answer, by name), with a band (a box and its title) behind it. Blocks are packed
 * left to right in shelves to about a screen's shape. Every cell has the same size, so a vertical channel
 * runs empty from top to bottom between two columns and a horizontal one from side to side between two rows.
 *
 * An edge leaves its source sideways (towards its target's side) into the vertical channel beside it, runs
 * along that channel to the horizontal channel above its target's row, along that to above the target, and
 * drops into the target from above: edges go out at the sides and in at the top. The track an edge takes in
 * a channel is its source's (vertical) or its target's (horizontal), so the edges of one node run together.
 * Its label sits on the horizontal run, in the channel, where there is no node, node label or band title.
 *
 * Why written here rather than taken from a library (measured in one run on this machine, Node 20, on the
 * example, the real master snapshot and 2,000 Profiles; docs/benchmarks.md): ELK's layered layout with
 * orthogonal routing (elkjs 0.12) took 116 ms / 1,444 ms for the example's namespaces / workloads, 2,223 ms
 * for the real platform's workloads and 5.2 s / 26.9 s at 2,000 Profiles; fcose (cytoscape-fcose 2.2) took
 * 59 / 170 / 156 ms but 77.6 s / 197.8 s at 2,000 Profiles, and routes no edge around nodes. This layout
 * takes under 25 ms for each of them and is the same picture for the same graph.
 */
import type { GraphNode } from './wire.ts';

/** A node as the layout sees it: a graph node, or a namespace folded into one (kind `namespace`). */
export type LayoutNode = Omit<GraphNode, 'kind'> & { kind: GraphNode['kind'] | 'namespace' };

export interface Position {
  x: number;
  y: number;
}

/** A namespace's box on the page ('' is the box of what is outside the mesh). */
export interface Band {
  namespace: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The rows of the map, top to bottom. */
export const Tier = { outside: 0, platform: 1, users: 2 } as const;
export type Tier = (typeof Tier)[keyof typeof Tier];

export interface LayoutInput {
  nodes: readonly LayoutNode[];
  /** The row of the map a namespace stands in ('' is always outside; others default to the platform's). */
  tier?: (namespace: string) => Tier;
  /** The width of a node's box on the page (the cells are made wide enough for the widest). */
  width?: (node: LayoutNode) => number;
  /** The width of a namespace's band title on the page (its block is made at least that wide). */
  titleWidth?: (namespace: string) => number;
  /** How much wider than tall the map should be (the pane it is drawn in); 1.6 if not said. */
  aspect?: number;
}

export interface Layout {
  positions: Map<string, Position>;
  /** The cell each node stands in. */
  cells: Map<string, { row: number; column: number }>;
  bands: Band[];
  /** Distance between column centres (a cell's width and a vertical channel's). */
  pitchX: number;
  /** Everything drawn: from (0, 0) to here. */
  size: { width: number; height: number };
}

/** An edge's path: the bend points between its ends, and where its label goes. */
export interface Route {
  points: Position[];
  label: Position;
}

/**
 * The grid's measures. A cell holds a node and its name under it; a vertical channel carries edge tracks;
 * a horizontal channel holds the title of the band below it, then edge tracks.
 */
export const Grid = {
  cellWidth: 170,
  cellHeight: 70,
  /** A node's centre below its cell's top. */
  nodeY: 26,
  channelX: 56,
  channelY: 72,
  /** The strip at the top of a horizontal channel that band titles use. */
  title: 22,
  /** Where the first track lies in a channel, how far apart tracks are, and how many there are. */
  firstTrackX: 8,
  firstTrackY: 34,
  trackStep: 6,
  tracks: 6,
} as const;

/** Order within an unfolded block: gateways, waypoints, workloads that send, that answer, what is outside. */
function rank(node: LayoutNode, answers: ReadonlySet<string>): number {
  switch (node.kind) {
    case 'gateway':
      return 0;
    case 'waypoint':
      return 1;
    case 'workload':
      return answers.has(node.id) ? 3 : 2;
    case 'external':
      return 4;
    default:
      return 5;
  }
}

interface Block {
  namespace: string;
  tier: Tier;
  nodes: LayoutNode[];
  /** Whether it is a namespace folded into one node (no band is drawn behind it). */
  folded: boolean;
  columns: number;
  rows: number;
}

/** Each namespace's block: its nodes in order, and how many columns and rows of cells it takes. */
function blocksOf(input: LayoutInput & { edges: readonly { target: string }[] }, pitchX: number): Block[] {
  const answers = new Set(input.edges.map((e) => e.target));
  const byNamespace = new Map<string, LayoutNode[]>();
  for (const node of input.nodes) {
    const namespace = node.namespace ?? '';
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), node]);
  }
  const blocks: Block[] = [];
  for (const [namespace, list] of byNamespace) {
    const nodes = [...list].sort((a, b) => rank(a, answers) - rank(b, answers) || compare(a.name, b.name));
    const folded = nodes.length === 1 && nodes[0]?.kind === 'namespace';
    const title = folded ? 0 : Math.ceil(((input.titleWidth?.(namespace) ?? 0) + 16) / pitchX);
    const columns = Math.max(title, Math.min(nodes.length, Math.ceil(Math.sqrt(nodes.length * 1.5))));
    blocks.push({
      namespace,
      tier: namespace === '' ? Tier.outside : (input.tier?.(namespace) ?? Tier.platform),
      nodes,
      folded,
      columns,
      rows: Math.ceil(nodes.length / columns),
    });
  }
  // Top to bottom by tier; within one, what is outside the mesh first, then by name.
  return blocks.sort(
    (a, b) =>
      a.tier - b.tier ||
      (a.namespace === '' ? -1 : b.namespace === '' ? 1 : compare(a.namespace, b.namespace)),
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The layout of a drawn graph (same graph, same layout). */
export function gridLayout(input: LayoutInput & { edges: readonly { target: string }[] }): Layout {
  const widest = Math.max(0, ...input.nodes.map((n) => input.width?.(n) ?? 40));
  const cellWidth = Math.max(Grid.cellWidth, widest + 20);
  const pitchX = cellWidth + Grid.channelX;
  const pitchY = Grid.cellHeight + Grid.channelY;
  const blocks = blocksOf(input, pitchX);
  const cells = blocks.reduce((sum, b) => sum + b.columns * b.rows, 0);
  const columns = Math.max(
    ...blocks.map((b) => b.columns),
    Math.ceil(Math.sqrt((cells * (input.aspect ?? 1.6) * pitchY) / pitchX)),
  );
  const layout: Layout = {
    positions: new Map(),
    cells: new Map(),
    bands: [],
    pitchX,
    size: { width: 0, height: 0 },
  };
  let row = 0;
  let column = 0;
  let shelf = 0;
  let tier: Tier | undefined;
  let used = 0;
  for (const block of blocks) {
    // A new tier starts a new shelf; so does a block that would pass the right edge.
    if (column > 0 && (block.tier !== tier || column + block.columns > columns)) {
      row += shelf;
      column = 0;
      shelf = 0;
    }
    tier = block.tier;
    block.nodes.forEach((node, i) => {
      const cell = { row: row + Math.floor(i / block.columns), column: column + (i % block.columns) };
      layout.cells.set(node.id, cell);
      layout.positions.set(node.id, {
        x: cell.column * pitchX + Grid.channelX + cellWidth / 2,
        y: cell.row * pitchY + Grid.channelY + Grid.nodeY,
      });
    });
    if (!block.folded)
      layout.bands.push({
        namespace: block.namespace,
        x: column * pitchX + Grid.channelX - 6,
        y: row * pitchY + 2,
        width: block.columns * pitchX - Grid.channelX + 12,
        height: block.rows * pitchY - 2,
      });
    column += block.columns;
    used = Math.max(used, column);
    shelf = Math.max(shelf, block.rows);
  }
  layout.size = { width: used * pitchX + Grid.channelX, height: (row + shelf) * pitchY + Grid.channelY / 2 };
  return layout;
}

/** A small, stable hash of a node id: which track its edges take in a channel. */
function track(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return (h >>> 0) % Grid.tracks;
}

/**
 * The route of an edge between two placed nodes: out of the source sideways into the vertical channel on
 * the target's side (the right one when both stand in one column), along it to the horizontal channel above
 * the target's row, along that to above the target, and down into it. Undefined when an end is not placed.
 */
export function edgeRoute(layout: Layout, source: string, target: string): Route | undefined {
  const [a, b] = [layout.cells.get(source), layout.cells.get(target)];
  const [from, to] = [layout.positions.get(source), layout.positions.get(target)];
  if (!a || !b || !from || !to) return undefined;
  const channel = b.column >= a.column ? a.column + 1 : a.column;
  const x = channel * layout.pitchX + Grid.firstTrackX + Grid.trackStep * track(source);
  const pitchY = Grid.cellHeight + Grid.channelY;
  const y = b.row * pitchY + Grid.firstTrackY + Grid.trackStep * track(target);
  return {
    // The last point, a pixel under the run, makes four: the page puts the label between the middle two.
    points: [
      { x, y: from.y },
      { x, y },
      { x: to.x, y },
      { x: to.x, y: y + 1 },
    ],
    label: { x: (x + to.x) / 2, y },
  };
}
