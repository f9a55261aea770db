/**
 * The mesh graph on the page: cytoscape over one mode's graph of traced traffic, laid out in namespace
 * bands and role columns (`layeredLayout`). Search, a namespace filter, focus on a node (its neighbours
 * stay, the rest fades), and a traced request's path drawn over it. Labels are drawn on the canvas, as
 * text: nothing from the graph becomes markup.
 */
import cytoscape, { type Core, type ElementDefinition, type NodeSingular } from 'cytoscape';
import { layeredLayout, type Layout } from '../console/layout.ts';
import type { GraphEdge, GraphNode, MeshGraph } from '../console/wire.ts';

/**
 * Above this many nodes a graph is large: its edges are drawn the cheap way, hidden while panning, and only
 * some are on the page at a time (those of the focused node, the namespace shown or the traced path), since
 * thousands of crossing edges hide more than they show; the orange rings still show who leaves the mesh.
 */
export const LargeGraph = 400;

export interface GraphEvents {
  /** A node was tapped (or the background: undefined). */
  select(node: GraphNode | undefined, edges: { into: GraphEdge[]; out: GraphEdge[] }): void;
}

export type EdgeFilter = 'usual' | 'all' | 'denied';

export function bandId(namespace: string): string {
  return `band:${namespace}`;
}

/** Room around a band's nodes, and above them for its name. */
const bandPadding = { side: 40, top: 44, bottom: 34 };

/**
 * The nodes, and a box behind each namespace's (a plain node, not a compound: far cheaper to draw). A node
 * some of whose requests leave the mesh (to PassthroughCluster or BlackHoleCluster) wears an orange ring,
 * so that it shows even where those edges are not drawn.
 */
function nodeElements(graph: MeshGraph, layout: Layout, outside: ReadonlySet<string>): ElementDefinition[] {
  const leaks = new Set(graph.edges.filter((e) => outside.has(e.target)).map((e) => e.source));
  const elements: ElementDefinition[] = layout.bands.map((b) => {
    const width = b.width + 2 * bandPadding.side;
    const height = b.height + bandPadding.top + bandPadding.bottom;
    return {
      group: 'nodes',
      data: {
        id: bandId(b.namespace),
        label: b.namespace || 'outside the mesh',
        width,
        height,
        ...{ color: '#eef2f7', shape: 'round-rectangle', size: 0 },
      },
      position: { x: b.x + b.width / 2, y: b.y - bandPadding.top + height / 2 },
      classes: 'band',
      selectable: false,
      grabbable: false,
    };
  });
  for (const node of graph.nodes)
    elements.push({
      group: 'nodes',
      data: { id: node.id, label: shortLabel(node.name), kind: node.kind, ...looks[node.kind] },
      position: { ...(layout.positions.get(node.id) ?? { x: 0, y: 0 }) },
      classes: leaks.has(node.id) ? `${node.kind} leaks` : node.kind,
    });
  return elements;
}

/** A name cut to fit under its node (the whole name is in the node's details and in search). */
function shortLabel(name: string): string {
  return name.length > 26 ? `${name.slice(0, 25)}…` : name;
}

/** The zoom and pan that fit the layout into a container of this size. */
function fitted(
  layout: Layout,
  width: number,
  height: number,
): { zoom: number; pan: { x: number; y: number } } {
  const left = Math.min(...layout.bands.map((b) => b.x)) - bandPadding.side;
  const top = Math.min(...layout.bands.map((b) => b.y)) - bandPadding.top;
  const right = Math.max(...layout.bands.map((b) => b.x + b.width)) + bandPadding.side;
  const bottom = Math.max(...layout.bands.map((b) => b.y + b.height)) + bandPadding.bottom;
  const margin = 20;
  const zoom = Math.max(
    minZoom,
    Math.min(
      fitZoom,
      (width - 2 * margin) / Math.max(1, right - left),
      (height - 2 * margin) / Math.max(1, bottom - top),
    ),
  );
  return {
    zoom,
    pan: { x: (width - (right - left) * zoom) / 2 - left * zoom, y: margin - top * zoom },
  };
}

const minZoom = 0.02;
const maxZoom = 3;
/** The most a whole graph is magnified to fit (a small graph stays at about its natural size). */
const fitZoom = 1.2;

function edgeElement(edge: GraphEdge, index: number, changed = false): ElementDefinition {
  const classes = [
    changed ? 'changed' : '',
    edge.denied === 0 ? '' : edge.denied === edge.requests ? 'denied' : 'some-denied',
    edge.passthrough > 0 ? 'passthrough' : '',
    edge.blackhole > 0 ? 'blackhole' : '',
    edge.mtls < edge.requests ? 'plaintext' : 'mtls',
  ];
  return {
    group: 'edges',
    data: {
      id: `edge:${index}`,
      source: edge.source,
      target: edge.target,
      weight: Math.min(8, 1 + Math.log10(edge.requests)),
    },
    classes: classes.filter(Boolean).join(' '),
  };
}

/** How each kind of node is drawn (carried in each node's data: one style rule serves them all). */
const looks: Record<GraphNode['kind'], { color: string; shape: string; size: number }> = {
  workload: { color: '#2f6db5', shape: 'ellipse', size: 22 },
  gateway: { color: '#7b3fa3', shape: 'diamond', size: 28 },
  waypoint: { color: '#14877a', shape: 'hexagon', size: 27 },
  external: { color: '#6b6b6b', shape: 'round-rectangle', size: 22 },
  passthrough: { color: '#d9730d', shape: 'octagon', size: 30 },
  blackhole: { color: '#222222', shape: 'octagon', size: 30 },
};

// Why long: it is the graph's stylesheet, one selector block per kind of node and edge state.
function style(large: boolean): cytoscape.StylesheetJson {
  return [
    {
      selector: 'node',
      style: {
        // A large graph names only the nodes in view of the question asked (focus, search, path): measuring
        // thousands of labels is most of the cost of its first frame, and at its zoom they can't be read.
        ...(large ? {} : { label: 'data(label)' }),
        'font-size': 11,
        'text-valign': 'bottom',
        'text-margin-y': 3,
        'min-zoomed-font-size': 7,
        width: 'data(size)',
        height: 'data(size)',
        shape: 'data(shape)' as cytoscape.Css.NodeShape,
        'background-color': 'data(color)',
        color: '#1d1d1d',
        'z-index-compare': 'manual',
        'z-index': 10,
      },
    },
    {
      selector: 'node.band',
      style: {
        shape: 'round-rectangle',
        width: 'data(width)',
        height: 'data(height)',
        'z-index-compare': 'manual',
        'z-index': 0,
        events: 'no',
        'background-color': '#eef2f7',
        'background-opacity': 1,
        'border-width': 1,
        'border-color': '#c5cfdb',
        label: 'data(label)',
        'text-valign': 'top',
        'text-halign': 'center',
        'font-size': 13,
        'font-weight': 'bold',
        color: '#3b4a5c',
        'text-margin-y': 22,
        'min-zoomed-font-size': 4,
      },
    },
    {
      selector: 'edge',
      style: {
        width: 'data(weight)',
        'line-color': '#8a9bb0',
        'target-arrow-color': '#8a9bb0',
        'target-arrow-shape': large ? 'none' : 'triangle',
        'curve-style': large ? 'haystack' : 'bezier',
        'arrow-scale': 0.8,
        opacity: 0.7,
        'z-index-compare': 'manual',
        'z-index': 5,
      },
    },
    { selector: 'edge.plaintext', style: { 'line-style': large ? 'solid' : 'dashed' } },
    {
      selector: 'edge.some-denied',
      style: { 'line-color': '#b0607a', 'target-arrow-color': '#b0607a' },
    },
    {
      selector: 'edge.denied',
      style: { 'line-color': '#c62828', 'target-arrow-color': '#c62828', opacity: 0.9 },
    },
    {
      selector: 'edge.passthrough',
      style: { 'line-color': '#d9730d', 'target-arrow-color': '#d9730d', opacity: 0.9 },
    },
    {
      selector: 'edge.blackhole',
      style: { 'line-color': '#222222', 'target-arrow-color': '#222222' },
    },
    { selector: 'node.leaks', style: { 'border-width': 3, 'border-color': '#d9730d' } },
    { selector: 'node.named', style: { label: 'data(label)' } },
    { selector: '.faded', style: { opacity: 0.1 } },
    { selector: '.hidden', style: { display: 'none' } },
    {
      selector: 'node.match',
      style: { 'border-width': 4, 'border-color': '#f2b705', 'z-index': 10 },
    },
    { selector: 'node:selected', style: { 'border-width': 4, 'border-color': '#111111' } },
    {
      selector: 'node.on-path',
      style: { 'border-width': 4, 'border-color': '#f2b705', 'z-index': 20, opacity: 1 },
    },
    {
      selector: 'edge.changed',
      style: {
        width: 5,
        'line-color': '#e4572e',
        'target-arrow-color': '#e4572e',
        'target-arrow-shape': 'triangle',
        'curve-style': 'bezier',
        'z-index': 15,
        opacity: 1,
      },
    },
    {
      selector: 'edge.on-path',
      style: {
        width: 6,
        'line-color': '#f2b705',
        'target-arrow-color': '#f2b705',
        'target-arrow-shape': 'triangle',
        'curve-style': 'bezier',
        'z-index': 20,
        opacity: 1,
      },
    },
  ];
}

export class GraphView {
  readonly cy: Core;
  readonly #graph: MeshGraph;
  /** Whether edges are drawn only for what is focused, filtered or traced (a large graph). */
  readonly partial: boolean;
  readonly #outside: Set<string>;
  readonly #nodes: Map<string, GraphNode>;
  readonly #layout: Layout;
  #filter: EdgeFilter = 'usual';
  /** The edges asked for besides the usual ones (a focus, a namespace, a path), and whether the filter may hide them. */
  #wanted: { test: (edge: GraphEdge) => boolean; force: boolean } | undefined;

  /** Edges (`source target`) a step of a migration plan changed: marked, and drawn whatever the filter. */
  readonly #changed: Set<string>;

  constructor(
    container: HTMLElement,
    graph: MeshGraph,
    events: GraphEvents,
    changed: readonly string[] = [],
  ) {
    this.#graph = graph;
    this.#changed = new Set(changed);
    if (this.#changed.size > 0) this.#wanted = { test: (e) => this.#isChanged(e), force: true };
    const large = graph.nodes.length > LargeGraph;
    this.partial = large;
    this.#nodes = new Map(graph.nodes.map((n) => [n.id, n]));
    this.#outside = new Set(
      graph.nodes.filter((n) => n.kind === 'passthrough' || n.kind === 'blackhole').map((n) => n.id),
    );
    const layout = layeredLayout(graph);
    this.#layout = layout;
    this.cy = cytoscape({
      container,
      ...fitted(layout, container.clientWidth, container.clientHeight),
      elements: [
        ...nodeElements(graph, layout, this.#outside),
        ...[...this.#edgeSet()].map((i) =>
          edgeElement(graph.edges[i] as GraphEdge, i, this.#isChanged(graph.edges[i] as GraphEdge)),
        ),
      ],
      layout: { name: 'preset', fit: false },
      style: style(large),
      minZoom,
      maxZoom,
      autoungrabify: large,
      hideEdgesOnViewport: large,
      textureOnViewport: large,
      boxSelectionEnabled: false,
    });
    this.cy.on('tap', 'node', (event) => {
      const node = event.target as NodeSingular;
      if (node.hasClass('band')) return;
      this.focus(node.id());
      events.select(this.node(node.id()), this.edgesOf(node.id()));
    });
    this.cy.on('tap', (event) => {
      if (event.target === this.cy) {
        this.clearFocus();
        events.select(undefined, { into: [], out: [] });
      }
    });
  }

  #isChanged(edge: GraphEdge): boolean {
    return this.#changed.has(`${edge.source} ${edge.target}`);
  }

  /** How many edges are marked as changed by the plan step shown. */
  get changedEdges(): number {
    return this.cy.edges('.changed').length;
  }

  node(id: string): GraphNode | undefined {
    return this.#nodes.get(id);
  }

  edgesOf(id: string): { into: GraphEdge[]; out: GraphEdge[] } {
    return {
      into: this.#graph.edges.filter((e) => e.target === id),
      out: this.#graph.edges.filter((e) => e.source === id),
    };
  }

  /** Fades all but a node and its neighbours. */
  focus(id: string): void {
    const node = this.cy.getElementById(id);
    if (node.empty()) return;
    this.cy.batch(() => {
      this.#clearMarks();
      this.#showEdges((e) => e.source === id || e.target === id);
      const near = node.closedNeighborhood();
      this.cy.elements().not(near).not('.band').addClass('faded');
      near.nodes().addClass('named');
      this.cy.nodes().unselect();
      node.select();
    });
  }

  clearFocus(): void {
    this.cy.batch(() => {
      this.#clearMarks();
      this.#showEdges(this.#changed.size > 0 ? (e) => this.#isChanged(e) : undefined, this.#changed.size > 0);
    });
  }

  /** Which edges are shown: `usual` those with allowed requests or leaving the mesh, `all`, or `denied`. */
  setEdgeFilter(filter: EdgeFilter): void {
    this.#filter = filter;
    this.cy.batch(() => this.#showEdges(this.#wanted?.test, this.#wanted?.force));
  }

  /** The indices of the edges to show now. */
  #edgeSet(): Set<number> {
    const passes = (e: GraphEdge) =>
      this.#filter === 'all' ||
      (this.#filter === 'denied' ? e.denied > 0 : e.allowed > 0 || e.passthrough > 0 || e.blackhole > 0);
    const keep = new Set<number>();
    this.#graph.edges.forEach((e, i) => {
      const wanted = this.#wanted?.test(e) ?? false;
      if ((wanted && this.#wanted?.force) || (passes(e) && (wanted || !this.partial))) keep.add(i);
    });
    return keep;
  }

  /** Puts on the page the edges to show, with those that pass `wanted` (and with `force`, whatever the filter). */
  #showEdges(wanted?: (edge: GraphEdge) => boolean, force = false): void {
    this.#wanted = wanted ? { test: wanted, force } : undefined;
    const keep = this.#edgeSet();
    this.cy
      .edges()
      .filter((e) => !keep.has(Number(e.id().slice('edge:'.length))))
      .remove();
    const add: ElementDefinition[] = [];
    for (const i of keep)
      if (this.cy.getElementById(`edge:${i}`).empty())
        add.push(
          edgeElement(
            this.#graph.edges[i] as GraphEdge,
            i,
            this.#isChanged(this.#graph.edges[i] as GraphEdge),
          ),
        );
    this.cy.add(add);
  }

  #clearMarks(): void {
    this.cy.elements().removeClass('faded match on-path named');
  }

  /** Marks the nodes whose id holds the text (case-insensitive); returns how many. */
  search(text: string): number {
    const needle = text.trim().toLowerCase();
    let found = 0;
    this.cy.batch(() => {
      this.#clearMarks();
      if (!needle) return;
      const matches = this.cy
        .nodes()
        .not('.band')
        .filter((n) => n.id().toLowerCase().includes(needle));
      found = matches.length;
      this.cy.elements().not(matches).not('.band').addClass('faded');
      matches.addClass('match named');
    });
    return found;
  }

  /** Fits the view to the marked nodes (search matches or a path), else to everything shown. */
  fit(): void {
    const marked = this.cy.nodes('.match, .on-path');
    const hidden = this.cy.nodes('.hidden');
    if (marked.empty() && hidden.empty())
      this.cy.viewport(fitted(this.#layout, this.cy.width(), this.cy.height()));
    else this.cy.fit(marked.nonempty() ? marked : this.cy.nodes(':visible'), 30);
  }

  /** Shows only one namespace and the nodes that talk with it ('' shows everything). */
  filterNamespace(namespace: string): void {
    this.cy.batch(() => {
      this.cy.elements().removeClass('hidden named');
      this.#showEdges(namespace ? this.#touches(namespace) : undefined);
      if (!namespace) return;
      const near = this.#inNamespace(namespace).closedNeighborhood();
      const bands = new Set(near.nodes().map((n) => bandId(this.node(n.id())?.namespace ?? '')));
      this.cy
        .elements()
        .not(near)
        .filter((e) => !bands.has(e.id()))
        .addClass('hidden');
      near.nodes().addClass('named');
    });
    this.fit();
  }

  /** Draws a traced request's path (node ids in order); returns the ids found on this graph. */
  showPath(path: readonly string[]): string[] {
    const found: string[] = [];
    this.cy.batch(() => {
      this.#clearMarks();
      this.cy.nodes().unselect();
      const steps = new Set(path.slice(1).map((id, i) => `${path[i]}\u0000${id}`));
      this.#showEdges((e) => steps.has(`${e.source}\u0000${e.target}`), true);
      let onPath = this.cy.collection();
      path.forEach((id, i) => {
        const node = this.cy.getElementById(id);
        if (node.empty()) return;
        found.push(id);
        onPath = onPath.union(node);
        const previous = path[i - 1];
        if (previous !== undefined) onPath = onPath.union(this.cy.getElementById(previous).edgesTo(node));
      });
      this.cy.elements().not(onPath).not('.band').addClass('faded');
      onPath.addClass('on-path');
      onPath.nodes().addClass('named');
    });
    return found;
  }

  /** Marks the nodes of one namespace (a finding's), fading the rest. */
  showNamespace(namespace: string): number {
    const inside = this.#inNamespace(namespace);
    this.cy.batch(() => {
      this.#clearMarks();
      this.#showEdges(this.#touches(namespace));
      this.cy
        .elements()
        .not(inside)
        .not(this.cy.getElementById(bandId(namespace)))
        .addClass('faded');
      inside.addClass('match named');
    });
    return inside.length;
  }

  /** Whether an edge starts or ends in the namespace. */
  #touches(namespace: string): (edge: GraphEdge) => boolean {
    return (e) => [e.source, e.target].some((id) => this.node(id)?.namespace === namespace);
  }

  #inNamespace(namespace: string): cytoscape.NodeCollection {
    return this.cy
      .nodes()
      .filter((n) => !n.hasClass('band') && (this.node(n.id())?.namespace ?? '') === namespace);
  }

  destroy(): void {
    this.cy.destroy();
  }
}
