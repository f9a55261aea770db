/**
 * The console graph's layout: a map of the platform on a grid, with every edge routed along the empty
 * channels between the grid's cells, so that no edge passes through a node that is not one of its ends.
 *
 * Rows of the map by role, top to bottom: what is outside the mesh and the namespaces that hold an ingress
 * gateway; the platform's namespaces; the users' namespaces (Profiles). Each namespace is a block of cells:
 * one cell when it is folded, a grid of its workloads when it is unfolded (gateways, waypoints, workloads
 * that send, workloads that answer, by name), with a band (a box and its title) behind it. Blocks are packed
 * left to right in shelves to about a screen's shape. Every cell has the same size and stands in a column and
 * a row, so a vertical channel runs empty from top to bottom between two columns and a horizontal one from
 * side to side between two rows.
 *
 * An edge leaves its source sideways (towards its target's side) into the vertical channel beside it, runs
 * along that channel to the horizontal channel above its target's row, along that to above the target, and
 * drops into the target from above: edges go out at the sides and in at the top. Runs that overlap in a
 * channel take different tracks, and a channel is as wide as its tracks need (up to a limit), so an edge has
 * a stretch of its own to point at. Its label sits on its horizontal run, in the channel, where there is no
 * node, node label or band title.
 *
 * Why written here rather than taken from a library (measured in one run on this machine, Node 20, on the
 * example, the real master snapshot and 2,000 Profiles: `npm run bench`, docs/benchmarks.md): ELK's layered
 * layout with orthogonal routing (elkjs 0.12) took 74 ms / 1,184 ms for the example's namespaces /
 * workloads, 2,055 ms for the real platform's workloads and 5.6 s / 25.1 s at 2,000 Profiles; fcose
 * (cytoscape-fcose 2.2) took 30 / 93 / 125 ms but 77.6 s for the 2,006 namespaces of 2,000 Profiles, and
 * routes no edge around nodes. This layout, routes included, takes under 30 ms for each of them and gives
 * the same picture for the same graph.
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
  /** Each edge's route (by `edgeKey`). */
  routes: Map<string, Route>;
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
  /** The least width of a vertical channel and height of a horizontal one (more tracks widen them). */
  channelX: 56,
  channelY: 72,
  /**
   * Where the first track lies in a channel: in a horizontal one, under the strip of 22 px that band titles
   * take and the room for half a label (a label sits on its edge's horizontal run); then how far apart
   * tracks are.
   */
  firstTrackX: 8,
  firstTrackY: 34,
  trackStep: 6,
  /** The most tracks a channel is widened to (past that, runs share them). */
  tracks: 24,
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
    const list = byNamespace.get(namespace);
    if (list) list.push(node);
    else byNamespace.set(namespace, [node]);
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

/** A block of cells on the grid: a namespace's. */
interface Placed {
  block: Block;
  row: number;
  column: number;
}

/** Blocks packed in shelves, tier by tier: each block's first cell, and each node's cell. */
function place(blocks: readonly Block[], columns: number) {
  const cells = new Map<string, { row: number; column: number }>();
  const placed: Placed[] = [];
  let [row, column, shelf, used] = [0, 0, 0, 0];
  let tier: Tier | undefined;
  for (const block of blocks) {
    // A new tier starts a new shelf; so does a block that would pass the right edge.
    if (column > 0 && (block.tier !== tier || column + block.columns > columns)) {
      row += shelf;
      column = 0;
      shelf = 0;
    }
    tier = block.tier;
    block.nodes.forEach((node, i) =>
      cells.set(node.id, { row: row + Math.floor(i / block.columns), column: column + (i % block.columns) }),
    );
    placed.push({ block, row, column });
    column += block.columns;
    used = Math.max(used, column);
    shelf = Math.max(shelf, block.rows);
  }
  return { cells, placed, columns: used, rows: row + shelf };
}

/** An edge's runs in the channels: its vertical channel and the rows it spans, its horizontal one and the columns. */
interface Runs {
  key: string;
  vertical: { channel: number; from: number; to: number };
  horizontal: { channel: number; from: number; to: number };
}

/**
 * Tracks in each channel for the runs in it, so that runs that overlap take different tracks (greedy
 * interval colouring, in a stable order), up to `Grid.tracks`; past that the track freed longest ago is
 * shared. Returns the track of each run (by key) and how many tracks each channel uses.
 */
function tracks(runs: readonly { key: string; channel: number; from: number; to: number }[]) {
  const track = new Map<string, number>();
  const used = new Map<number, number>();
  const byChannel = new Map<number, (typeof runs)[number][]>();
  for (const r of runs) {
    const list = byChannel.get(r.channel);
    if (list) list.push(r);
    else byChannel.set(r.channel, [r]);
  }
  for (const [channel, list] of byChannel) {
    const ends: number[] = [];
    const sorted = [...list].sort((a, b) => a.from - b.from || a.to - b.to || compare(a.key, b.key));
    for (const r of sorted) {
      let t = ends.findIndex((end) => end < r.from);
      if (t < 0 && ends.length < Grid.tracks) t = ends.length;
      if (t < 0) t = ends.indexOf(Math.min(...ends));
      ends[t] = Math.max(ends[t] ?? -Infinity, r.to);
      track.set(r.key, t);
    }
    used.set(channel, ends.length);
  }
  return { track, used };
}

/** Where each channel starts, given each one's width and the cells' size between them. */
function offsets(count: number, widths: (i: number) => number, cell: number): number[] {
  const out: number[] = [0];
  for (let i = 1; i <= count; i++) out.push((out[i - 1] as number) + widths(i - 1) + cell);
  return out;
}

export function edgeKey(source: string, target: string): string {
  return `${source}\u0000${target}`;
}

// Why long: placement, the channels' tracks and widths, then coordinates and routes, in one pass each.
/** The layout of a drawn graph and its edges' routes (same graph, same layout). */
export function gridLayout(
  input: LayoutInput & { edges: readonly { source: string; target: string }[] },
): Layout {
  const widest = Math.max(0, ...input.nodes.map((n) => input.width?.(n) ?? 40));
  const cellWidth = Math.max(Grid.cellWidth, widest + 20);
  const pitchX = cellWidth + Grid.channelX;
  const blocks = blocksOf(input, pitchX);
  const count = blocks.reduce((sum, b) => sum + b.columns * b.rows, 0);
  const grid = place(
    blocks,
    Math.max(
      ...blocks.map((b) => b.columns),
      Math.ceil(Math.sqrt((count * (input.aspect ?? 1.6) * (Grid.cellHeight + Grid.channelY)) / pitchX)),
    ),
  );
  // Each edge's runs, in half-cell units: a cell's centre is 2i+1, the channel before it 2i.
  const runs: Runs[] = [];
  const seen = new Set<string>();
  for (const e of input.edges) {
    const [a, b] = [grid.cells.get(e.source), grid.cells.get(e.target)];
    const key = edgeKey(e.source, e.target);
    if (!a || !b || e.source === e.target || seen.has(key)) continue;
    seen.add(key);
    const channel = b.column >= a.column ? a.column + 1 : a.column;
    const [ys, xs] = [
      [2 * a.row + 1, 2 * b.row],
      [2 * channel, 2 * b.column + 1],
    ];
    runs.push({
      key,
      vertical: { channel, from: Math.min(...ys), to: Math.max(...ys) },
      horizontal: { channel: b.row, from: Math.min(...xs), to: Math.max(...xs) },
    });
  }
  const vertical = tracks(runs.map((r) => ({ key: r.key, ...r.vertical })));
  const horizontal = tracks(runs.map((r) => ({ key: r.key, ...r.horizontal })));
  const step = Grid.trackStep;
  const left = offsets(
    grid.columns,
    (c) => Math.max(Grid.channelX, 2 * Grid.firstTrackX + step * (vertical.used.get(c) ?? 0)),
    cellWidth,
  );
  const top = offsets(
    grid.rows,
    (r) => Math.max(Grid.channelY, Grid.firstTrackY + 10 + step * (horizontal.used.get(r) ?? 0)),
    Grid.cellHeight,
  );
  const at = (list: number[], i: number) => list[i] ?? 0;
  const cellLeft = (c: number) => at(left, c + 1) - cellWidth;
  const cellTop = (r: number) => at(top, r + 1) - Grid.cellHeight;
  const layout: Layout = {
    positions: new Map(),
    cells: grid.cells,
    bands: [],
    routes: new Map(),
    pitchX,
    size: { width: at(left, grid.columns) + Grid.channelX, height: at(top, grid.rows) + Grid.channelY / 2 },
  };
  for (const [id, cell] of grid.cells)
    layout.positions.set(id, { x: cellLeft(cell.column) + cellWidth / 2, y: cellTop(cell.row) + Grid.nodeY });
  for (const { block, row, column } of grid.placed)
    if (!block.folded)
      layout.bands.push({
        namespace: block.namespace,
        x: cellLeft(column) - 6,
        y: at(top, row) + 2,
        width: cellLeft(column + block.columns - 1) + cellWidth + 12 - cellLeft(column),
        height: cellTop(row + block.rows - 1) + Grid.cellHeight - at(top, row) - 2,
      });
  for (const r of runs) {
    const x = at(left, r.vertical.channel) + Grid.firstTrackX + step * (vertical.track.get(r.key) ?? 0);
    const y = at(top, r.horizontal.channel) + Grid.firstTrackY + step * (horizontal.track.get(r.key) ?? 0);
    const [source, target] = r.key.split('\u0000') as [string, string];
    const [from, to] = [layout.positions.get(source), layout.positions.get(target)];
    if (from && to) layout.routes.set(r.key, routeThrough(from, to, x, y));
  }
  return layout;
}

/**
 * The route out of `from` sideways to the vertical run at `x`, along it to the horizontal run at `y`,
 * along that to above `to`, and down into it. The last point, a pixel under the run, makes four: the page
 * puts an edge's label between the middle two.
 */
function routeThrough(from: Position, to: Position, x: number, y: number): Route {
  return {
    points: [
      { x, y: from.y },
      { x, y },
      { x: to.x, y },
      { x: to.x, y: y + 1 },
    ],
    label: { x: (x + to.x) / 2, y },
  };
}

/** An edge's route, as the layout made it (undefined for an edge the layout was not given). */
export function edgeRoute(layout: Layout, source: string, target: string): Route | undefined {
  return layout.routes.get(edgeKey(source, target));
}
