/**
 * The mesh graph on the page: cytoscape over one mode's graph of traced traffic, laid out as a map of the
 * platform with edges routed around nodes (`gridLayout`, `edgeRoute`). It opens with each namespace folded
 * into one node (a graph of namespaces); a tap on a namespace shows its workloads. Edge labels (counts) show for the hovered or
 * selected edge, or all on demand; a selected edge is drawn over the rest, which fades, and the arrow keys
 * move the selection. Search, a namespace filter, focus on a node (its neighbours stay, the rest fades), a
 * traced request's path drawn over it (its namespaces unfolded), and the traffic the mesh reported laid
 * over the edges. Labels are drawn on the canvas, as text: nothing from the graph becomes markup.
 */
import { at } from '../model/checked.ts';
import cytoscape, { type Core, type ElementDefinition, type NodeSingular } from 'cytoscape';
import { edgeRoute, gridLayout, Tier, type Layout } from '../console/layout.ts';
import { style } from './graph-style.ts';
import {
  bandId,
  edgeElement,
  fitted,
  fitZoom,
  foldedLabel,
  foldedWidth,
  labelWidth,
  maxZoom,
  minZoom,
  nodeElements,
  readableZoom,
  segments,
  titleWidth,
  withMode,
} from './graph-elements.ts';
import {
  drawnGraph,
  namespaceNodeId,
  type DrawnEdge,
  type DrawnGraph,
  type DrawnNode,
  type Expanded,
} from '../console/collapse.ts';
import type { GraphEdge, MeshGraph, NamespaceMode, ObservedGraph } from '../console/wire.ts';

/**
 * Above this many nodes a graph is large: its edges are drawn the cheap way, hidden while panning, and only
 * some are on the page at a time (those of the focused node, the namespace shown or the traced path), since
 * thousands of crossing edges hide more than they show; the orange rings still show who leaves the mesh.
 */
export const LargeGraph = 400;

export interface GraphEvents {
  /** A node was tapped (or the background: undefined). */
  select(node: DrawnNode | undefined, edges: { into: GraphEdge[]; out: GraphEdge[] }): void;
  /** An edge was tapped. */
  selectEdge?(edge: DrawnEdge): void;
  /** A folded namespace was tapped (and unfolded): its mode, and why it stays where it stays. */
  namespace?(namespace: string, mode: NamespaceMode | undefined): void;
  /** The namespaces shown unfolded changed. */
  expanded?(): void;
}

/** What a view draws besides the graph: a plan step's changed edges, observed traffic, what starts unfolded. */
export interface ViewOptions {
  changed?: readonly string[];
  observed?: ObservedGraph;
  expanded?: Expanded;
}

export type EdgeFilter = 'usual' | 'all' | 'denied';

export class GraphView {
  #cy: Core | undefined;
  readonly #container: HTMLElement;
  readonly #graph: MeshGraph;
  readonly #observed: ObservedGraph | undefined;
  readonly #events: GraphEvents;
  #expanded: Set<string> | 'all';
  #drawn!: DrawnGraph;
  /** Whether edges are drawn only for what is focused, filtered or traced (a large graph). */
  partial = false;
  #outside = new Set<string>();
  #nodes = new Map<string, DrawnNode>();
  /** The drawn node each node of the graph is in (itself, or its folded namespace). */
  #drawnOf = new Map<string, string>();
  #layout!: Layout;
  #filter: EdgeFilter = 'usual';
  /** The edges asked for besides the usual ones (a focus, a namespace, a path), and whether the filter may hide them. */
  #wanted: { test: (edge: DrawnEdge) => boolean; force: boolean } | undefined;

  /** Each namespace's data-plane mode, by name (when the graph says them). */
  readonly #modes: ReadonlyMap<string, NamespaceMode>;
  /** The namespaces that hold an ingress gateway (drawn in the map's top row). */
  readonly #ingress: ReadonlySet<string>;
  /** Whether every edge shows its label ("Labels" on); else only the hovered and the selected one. */
  #labels = false;
  /** The drawn edge selected (its index), if any. */
  #selectedEdge: number | undefined;

  /** Edges (`source target`) a step of a migration plan changed: marked, and drawn whatever the filter. */
  readonly #changed: Set<string>;

  constructor(container: HTMLElement, graph: MeshGraph, events: GraphEvents, options: ViewOptions = {}) {
    this.#graph = graph;
    this.#observed = options.observed;
    this.#events = events;
    this.#changed = new Set(options.changed ?? []);
    this.#modes = new Map((graph.namespaces ?? []).map((m) => [m.name, m]));
    this.#ingress = new Set(graph.nodes.flatMap((n) => (n.kind === 'gateway' ? [n.namespace ?? ''] : [])));
    const expanded = options.expanded ?? new Set<string>();
    this.#expanded = expanded === 'all' ? 'all' : new Set(expanded);
    this.#container = container;
    this.#draw();
  }

  /** The cytoscape instance on the page (a new one each time the folding changes). */
  get cy(): Core {
    return this.#cy as Core;
  }

  /** Taps: a folded namespace unfolds, a node is focused, an edge explained, the background clears. */
  #listen(events: GraphEvents): void {
    this.cy.on('tap', 'node', (event) => {
      const node = event.target as NodeSingular;
      if (node.hasClass('band')) return;
      const drawn = this.node(node.id());
      if (drawn?.kind === 'namespace' && drawn.namespace !== undefined) {
        this.expand(drawn.namespace);
        events.namespace?.(drawn.namespace, this.#modes.get(drawn.namespace));
        return;
      }
      this.focus(node.id());
      events.select(drawn, this.edgesOf(node.id()));
    });
    this.cy.on('tap', 'edge', (event) => {
      this.selectEdge(Number((event.target as cytoscape.EdgeSingular).id().slice('edge:'.length)));
    });
    this.cy.on('mouseover', 'edge', (event) => (event.target as cytoscape.EdgeSingular).addClass('hovered'));
    this.cy.on('mouseout', 'edge', (event) =>
      (event.target as cytoscape.EdgeSingular).removeClass('hovered'),
    );
    this.cy.on('tap', (event) => {
      if (event.target === this.cy) {
        this.clearFocus();
        events.select(undefined, { into: [], out: [] });
      }
    });
  }

  /** Folds and lays out the graph as the expanded namespaces say, and puts it on the page. */
  #draw(): void {
    this.#drawn = drawnGraph(this.#graph, this.#observed, this.#expanded);
    this.#nodes = new Map(this.#drawn.nodes.map((n) => [n.id, n]));
    this.#drawnOf = new Map();
    for (const n of [...this.#graph.nodes, ...(this.#observed?.nodes ?? [])])
      this.#drawnOf.set(n.id, this.#nodes.has(n.id) ? n.id : namespaceNodeId(n.namespace ?? ''));
    this.#outside = new Set(
      this.#drawn.nodes.filter((n) => n.kind === 'passthrough' || n.kind === 'blackhole').map((n) => n.id),
    );
    const large = this.#drawn.nodes.length > LargeGraph;
    this.partial = large;
    this.#layout = gridLayout({
      nodes: this.#drawn.nodes,
      edges: this.#drawn.edges,
      tier: (namespace) => this.#tier(namespace),
      width: (node) => (node.kind === 'namespace' ? foldedWidth(foldedLabel(node, this.#modes)) : 30),
      titleWidth: (namespace) => titleWidth(withMode(namespace, this.#modes, ' · ')),
      aspect: Math.min(
        3,
        Math.max(0.8, this.#container.clientWidth / Math.max(1, this.#container.clientHeight)),
      ),
    });
    this.#wanted = this.#changed.size > 0 ? { test: (e) => this.#isChanged(e), force: true } : undefined;
    this.#cy?.destroy();
    this.#cy = cytoscape({
      container: this.#container,
      ...fitted(this.#layout, this.#container.clientWidth, this.#container.clientHeight, this.#readable()),
      elements: [
        ...nodeElements(this.#drawn, this.#layout, this.#outside, this.#modes),
        ...[...this.#edgeSet()].map((i) => this.#edgeElement(i)),
      ],
      layout: { name: 'preset', fit: false },
      style: style(large),
      minZoom,
      maxZoom,
      // A large graph is drawn the cheap way while the view moves.
      autoungrabify: large,
      hideEdgesOnViewport: large,
      textureOnViewport: large,
      boxSelectionEnabled: false,
    });
    this.#listen(this.#events);
  }

  /** The least zoom the map is fitted at: names readable, unless the graph is too large to name its nodes. */
  #readable(): number {
    return this.#drawn.nodes.length > LargeGraph ? 0 : readableZoom;
  }

  /** A namespace's row of the map: with an ingress gateway, a user's (a Profile's), or the platform's. */
  #tier(namespace: string): Tier {
    if (this.#ingress.has(namespace)) return Tier.outside;
    return this.#modes.get(namespace)?.profile ? Tier.users : Tier.platform;
  }

  #edgeElement(i: number): ElementDefinition {
    const edge = at(this.#drawn.edges, i);
    const element = edgeElement(edge, i, { changed: this.#isChanged(edge), labelled: false });
    const route = edgeRoute(this.#layout, edge.source, edge.target);
    const [from, to] = [this.#layout.positions.get(edge.source), this.#layout.positions.get(edge.target)];
    return route && from && to
      ? { ...element, data: { ...element.data, ...segments(from, to, route.points) } }
      : element;
  }

  /** Whether any edge of the graph that the drawn edge stands for was changed by the plan step. */
  #isChanged(edge: DrawnEdge): boolean {
    if (this.#changed.size === 0) return false;
    return edge.memberEdges.some((i) => {
      const e = at(this.#graph.edges, i);
      return this.#changed.has(`${e.source} ${e.target}`);
    });
  }

  /** The namespaces shown unfolded: their names, or 'all'. */
  get expanded(): readonly string[] | 'all' {
    return this.#expanded === 'all' ? 'all' : [...this.#expanded].sort();
  }

  /** Shows the workloads of these namespaces (those already shown stay); redraws only if one was folded. */
  expand(...namespaces: string[]): void {
    if (this.#expanded === 'all') return;
    const folded = namespaces.filter((n) => !(this.#expanded as Set<string>).has(n));
    if (folded.length === 0) return;
    for (const n of folded) this.#expanded.add(n);
    this.#draw();
    this.#events.expanded?.();
  }

  /** Every namespace unfolded (`all`) or every one folded (`none`). */
  setGrouping(grouping: 'namespaces' | 'workloads'): void {
    const next = grouping === 'workloads' ? 'all' : new Set<string>();
    if (next === this.#expanded || (next !== 'all' && this.#expanded !== 'all' && this.#expanded.size === 0))
      return;
    this.#expanded = next;
    this.#draw();
    this.#events.expanded?.();
  }

  /** How many edges are marked as changed by the plan step shown. */
  get changedEdges(): number {
    return this.cy.edges('.changed').length;
  }

  /** The drawn graph: nodes (namespaces folded or not) and edges. */
  get drawn(): DrawnGraph {
    return this.#drawn;
  }

  node(id: string): DrawnNode | undefined {
    return this.#nodes.get(id);
  }

  /** The graph's edges into and out of a node (a folded namespace: into and out of the namespace). */
  edgesOf(id: string): { into: GraphEdge[]; out: GraphEdge[] } {
    const node = this.node(id);
    const inside =
      node?.kind === 'namespace'
        ? (other: string) => this.#drawnOf.get(other) === id
        : (other: string) => other === id;
    return {
      into: this.#graph.edges.filter((e) => inside(e.target) && !inside(e.source)),
      out: this.#graph.edges.filter((e) => inside(e.source) && !inside(e.target)),
    };
  }

  /** The graph's edges and the observed edges a drawn edge stands for. */
  membersOf(edge: DrawnEdge): { edges: GraphEdge[]; observed: ObservedGraph['edges'] } {
    return {
      edges: edge.memberEdges.map((i) => at(this.#graph.edges, i)),
      observed: edge.observedEdges.map((i) => this.#observed?.edges[i] as ObservedGraph['edges'][number]),
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

  /** The indices of the edges to show now (observed traffic always shows). */
  #edgeSet(): Set<number> {
    const passes = (e: DrawnEdge) =>
      e.observed !== undefined ||
      this.#filter === 'all' ||
      (this.#filter === 'denied' ? e.denied > 0 : e.allowed > 0 || e.passthrough > 0 || e.blackhole > 0);
    const keep = new Set<number>();
    this.#drawn.edges.forEach((e, i) => {
      const wanted = this.#wanted?.test(e) ?? false;
      if ((wanted && this.#wanted?.force) || (passes(e) && (wanted || !this.partial))) keep.add(i);
    });
    return keep;
  }

  /** Puts on the page the edges to show, with those that pass `wanted` (and with `force`, whatever the filter). */
  #showEdges(wanted?: (edge: DrawnEdge) => boolean, force = false): void {
    this.#wanted = wanted ? { test: wanted, force } : undefined;
    const keep = this.#edgeSet();
    this.cy
      .edges()
      .filter((e) => !keep.has(Number(e.id().slice('edge:'.length))))
      .remove();
    const add: ElementDefinition[] = [];
    for (const i of keep) if (this.cy.getElementById(`edge:${i}`).empty()) add.push(this.#edgeElement(i));
    this.cy.add(add);
    if (this.#labels) this.#placeLabels();
  }

  #clearMarks(): void {
    this.#selectedEdge = undefined;
    this.cy.elements().removeClass('faded match on-path named selected-edge');
  }

  /**
   * Selects a drawn edge (by index): it is drawn thick and dark with its label, its two ends named, and
   * everything else faded; the page is told, to show what the edge stands for.
   */
  selectEdge(index: number): void {
    const edge = this.#drawn.edges[index];
    const element = this.cy.getElementById(`edge:${index}`);
    if (!edge || element.empty()) return;
    this.cy.batch(() => {
      this.#clearMarks();
      this.cy.nodes().unselect();
      const ends = element.connectedNodes();
      this.cy.elements().not(element).not(ends).not('.band').addClass('faded');
      element.addClass('selected-edge');
      ends.addClass('named');
    });
    this.#selectedEdge = index;
    this.#events.selectEdge?.(edge);
  }

  /** The selected edge's index, if an edge is selected. */
  get selectedEdge(): number | undefined {
    return this.#selectedEdge;
  }

  /**
   * Moves the selection to the next (`+1`) or previous (`-1`) edge on the page, in the order of their
   * source and target names (the first one when none is selected); the keyboard's way through the edges.
   */
  stepEdge(direction: 1 | -1): void {
    const shown = this.cy
      .edges()
      .filter((e) => !e.hasClass('hidden'))
      .map((e) => Number(e.id().slice('edge:'.length)))
      .sort((a, b) => {
        const [x, y] = [at(this.#drawn.edges, a), at(this.#drawn.edges, b)];
        return x.source.localeCompare(y.source) || x.target.localeCompare(y.target) || a - b;
      });
    if (shown.length === 0) return;
    const now = this.#selectedEdge === undefined ? -1 : shown.indexOf(this.#selectedEdge);
    const next =
      now < 0 ? (direction > 0 ? 0 : shown.length - 1) : (now + direction + shown.length) % shown.length;
    const index = shown[next];
    if (index !== undefined) this.selectEdge(index);
  }

  /**
   * Edge labels on: every shown edge whose label finds room (none over another); or off, the default: only
   * the hovered and the selected one.
   */
  setLabels(on: boolean): void {
    this.#labels = on;
    this.#placeLabels();
  }

  /**
   * With labels on, labels the shown edges that matter most first (changed by the plan step, denied,
   * drifting, then by volume), each where its route puts it, skipping one that would cover a label already
   * placed: it shows when its edge is hovered or selected. (Routes keep labels off nodes and their names.)
   */
  #placeLabels(): void {
    const edges = this.cy.edges();
    this.cy.batch(() => {
      edges.removeClass('labelled');
      if (!this.#labels) return;
      const order = edges
        .map((e) => ({ element: e, edge: at(this.#drawn.edges, Number(e.id().slice('edge:'.length))) }))
        .sort(
          (a, b) =>
            Number(this.#isChanged(b.edge)) - Number(this.#isChanged(a.edge)) ||
            Math.sign(b.edge.denied) - Math.sign(a.edge.denied) ||
            Number(b.element.hasClass('drift')) - Number(a.element.hasClass('drift')) ||
            b.edge.requests - a.edge.requests,
        );
      const placed: { x1: number; y1: number; x2: number; y2: number }[] = [];
      for (const { element, edge } of order) {
        const route = edgeRoute(this.#layout, edge.source, edge.target);
        if (!route) continue;
        const half = (labelWidth * String(element.data('label')).length + 12) / 2;
        const box = {
          x1: route.label.x - half,
          y1: route.label.y - 9,
          x2: route.label.x + half,
          y2: route.label.y + 9,
        };
        if (placed.some((p) => p.x1 < box.x2 && box.x1 < p.x2 && p.y1 < box.y2 && box.y1 < p.y2)) continue;
        placed.push(box);
        element.addClass('labelled');
      }
    });
  }

  /**
   * Marks the nodes whose id holds the text (case-insensitive), and the folded namespaces that hold such a
   * node; returns how many nodes of the graph match.
   */
  search(text: string): number {
    const needle = text.trim().toLowerCase();
    const ids = needle ? [...this.#drawnOf.keys()].filter((id) => id.toLowerCase().includes(needle)) : [];
    this.cy.batch(() => {
      this.#clearMarks();
      if (!needle) return;
      const shown = new Set(ids.map((id) => this.#drawnOf.get(id) ?? id));
      const matches = this.cy
        .nodes()
        .not('.band')
        .filter((n) => shown.has(n.id()) || n.id().toLowerCase().includes(needle));
      this.cy.elements().not(matches).not('.band').addClass('faded');
      matches.addClass('match named');
    });
    return ids.length;
  }

  /** Fits the view to the marked nodes (search matches or a path), else to everything shown. */
  fit(): void {
    const marked = this.cy.nodes('.match, .on-path');
    const hidden = this.cy.nodes('.hidden');
    if (marked.empty() && hidden.empty())
      this.cy.viewport(fitted(this.#layout, this.cy.width(), this.cy.height(), this.#readable()));
    else this.cy.fit(marked.nonempty() ? marked : this.cy.nodes(':visible'), 30);
  }

  /** Shows only one namespace (unfolded) and the nodes that talk with it ('' shows everything). */
  filterNamespace(namespace: string): void {
    if (namespace) this.expand(namespace);
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

  /**
   * Draws a traced request's path (node ids in order), unfolding the namespaces it crosses; returns the
   * ids found on this graph.
   */
  showPath(path: readonly string[]): string[] {
    this.expand(
      ...path.flatMap((id) => {
        const namespace = this.#graph.nodes.find((n) => n.id === id)?.namespace;
        return namespace === undefined ? [] : [namespace];
      }),
    );
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

  /**
   * Selects the edge between two nodes of the graph or of the observed traffic (a finding's), unfolding
   * their namespaces; whether it is drawn.
   */
  showEdge(source: string, target: string): boolean {
    const namespaces = [source, target].flatMap((id) => {
      const node = [...this.#graph.nodes, ...(this.#observed?.nodes ?? [])].find((n) => n.id === id);
      return node?.namespace === undefined ? [] : [node.namespace];
    });
    this.expand(...namespaces);
    const index = this.#drawn.edges.findIndex((e) => e.source === source && e.target === target);
    if (index < 0) return false;
    this.#showEdges((e) => e.source === source && e.target === target, true);
    this.selectEdge(index);
    // The view moves to the edge and its ends, no closer than the map opens at.
    const element = this.cy.getElementById(`edge:${index}`);
    this.cy.fit(element.union(element.connectedNodes()), 60);
    if (this.cy.zoom() > fitZoom)
      this.cy.zoom({ level: fitZoom, renderedPosition: { x: this.cy.width() / 2, y: this.cy.height() / 2 } });
    return this.#selectedEdge === index;
  }

  /** Marks the proxy of the hop focused in the hop table (a node id; undefined clears the mark). */
  markHop(id: string | undefined): void {
    this.cy.nodes('.hop-mark').removeClass('hop-mark');
    if (id !== undefined) this.cy.getElementById(id).addClass('hop-mark');
  }

  /** Marks the nodes of one namespace (a finding's), unfolded, fading the rest. */
  showNamespace(namespace: string): number {
    this.expand(namespace);
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
  #touches(namespace: string): (edge: DrawnEdge) => boolean {
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
