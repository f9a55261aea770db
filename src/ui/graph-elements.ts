/**
 * The mesh graph's elements as cytoscape takes them: the nodes with their bands, each edge with its route
 * as segment weights and distances, labels cut to fit their cells, and the zoom that fits the map.
 */
import type { ElementDefinition } from 'cytoscape';
import type { Layout, Position } from '../console/layout.ts';
import {
  edgeLabel,
  errorRatio,
  type DrawnEdge,
  type DrawnGraph,
  type DrawnNode,
} from '../console/collapse.ts';
import type { NamespaceMode } from '../console/wire.ts';

export function bandId(namespace: string): string {
  return `band:${namespace}`;
}

/**
 * The nodes, and a box behind each namespace's (a plain node, not a compound: far cheaper to draw). A node
 * some of whose requests leave the mesh (to PassthroughCluster or BlackHoleCluster) wears an orange ring,
 * so that it shows even where those edges are not drawn.
 */
export function nodeElements(
  graph: DrawnGraph,
  layout: Layout,
  outside: ReadonlySet<string>,
  modes: ReadonlyMap<string, NamespaceMode>,
): ElementDefinition[] {
  const leaks = new Set(graph.edges.filter((e) => outside.has(e.target)).map((e) => e.source));
  // A folded namespace is a node of its own: no box around it.
  const folded = new Set(graph.nodes.filter((n) => n.kind === 'namespace').map((n) => n.namespace));
  const elements: ElementDefinition[] = layout.bands
    .filter((b) => !folded.has(b.namespace))
    .map((b) => {
      const label = b.namespace ? withMode(b.namespace, modes, ' · ') : 'outside the mesh';
      return {
        group: 'nodes',
        data: {
          id: bandId(b.namespace),
          label,
          width: b.width,
          height: b.height,
          // The title at the box's top left (the layout makes the box at least as wide as its title).
          titleShift: Math.min(0, titleWidth(label) / 2 + 12 - b.width / 2),
          ...{ color: '#eef2f7', shape: 'round-rectangle', size: 0 },
        },
        position: { x: b.x + b.width / 2, y: b.y + b.height / 2 },
        classes: 'band',
        selectable: false,
        grabbable: false,
      };
    });
  for (const node of graph.nodes)
    elements.push({
      group: 'nodes',
      data: {
        id: node.id,
        label: node.kind === 'namespace' ? foldedLabel(node, modes) : shortLabel(node.name),
        kind: node.kind,
        ...looks[node.kind],
        // A folded namespace is a box as wide as its name.
        ...(node.kind === 'namespace' ? { width: foldedWidth(foldedLabel(node, modes)) } : {}),
      },
      position: { ...(layout.positions.get(node.id) ?? { x: 0, y: 0 }) },
      classes: [
        node.kind,
        leaks.has(node.id) ? 'leaks' : '',
        node.kind === 'namespace' ? modeClass(modes.get(node.name)) : '',
      ]
        .filter(Boolean)
        .join(' '),
    });
  return elements;
}

/** A namespace's name (or label) with its data-plane mode after it, when the graph says it. */
export function withMode(
  text: string,
  modes: ReadonlyMap<string, NamespaceMode>,
  between: string,
  name = text,
): string {
  const mode = modes.get(name)?.mode;
  return mode ? `${text}${between}${mode}` : text;
}

/** The class a folded namespace's box is drawn with for its mode (its border: see graph-style.ts). */
function modeClass(mode: NamespaceMode | undefined): string {
  switch (mode?.mode) {
    case 'ambient':
      return 'mode-ambient';
    case 'sidecar':
      return 'mode-sidecar';
    case undefined:
    case 'outside the mesh':
      return '';
    default:
      return 'mode-half';
  }
}

/** A folded namespace's label: its name and how many nodes it holds, and its mode under them. */
export function foldedLabel(node: DrawnNode, modes: ReadonlyMap<string, NamespaceMode>): string {
  return withMode(`${node.name} (${node.members ?? 0})`, modes, '\n', node.name);
}

/** The width of a folded namespace's box: its label's longest line, in the node font. */
export function foldedWidth(label: string): number {
  return 16 + 7.2 * Math.max(...label.split('\n').map((line) => line.length));
}

/** About how wide a character of an edge label is on the page (11 px). */
export const labelWidth = 6.6;

/** A band title's width on the page (bold 13 px). */
export function titleWidth(title: string): number {
  return 8.2 * title.length;
}

/**
 * An edge's bend points as cytoscape's segment weights and distances: each point as a fraction along the
 * line between the two nodes' centres and a distance off it, to its left.
 */
export function segments(
  from: Position,
  to: Position,
  points: readonly Position[],
): { weights: number[]; distances: number[] } {
  const [dx, dy] = [to.x - from.x, to.y - from.y];
  const length = Math.hypot(dx, dy) || 1;
  return {
    weights: points.map((p) => ((p.x - from.x) * dx + (p.y - from.y) * dy) / (length * length)),
    distances: points.map((p) => ((p.x - from.x) * -dy + (p.y - from.y) * dx) / length),
  };
}

/** A name cut to fit under its node (the whole name is in the node's details and in search). */
function shortLabel(name: string): string {
  return name.length > 24 ? `${name.slice(0, 23)}…` : name;
}

/**
 * The zoom and pan that fit the layout into a container of this size; when names are drawn, never so small
 * that they can't be read (`readable`, the zoom at which an 11 px name is about 8 px): a map larger than
 * that opens at its top left (the ingress and the platform), the rest a pan away.
 */
export function fitted(
  layout: Layout,
  width: number,
  height: number,
  readable: number,
): { zoom: number; pan: { x: number; y: number } } {
  const margin = 20;
  const whole = Math.min(
    (width - 2 * margin) / Math.max(1, layout.size.width),
    (height - 2 * margin) / Math.max(1, layout.size.height),
  );
  const zoom = Math.max(minZoom, readable, Math.min(fitZoom, whole));
  const x = (width - layout.size.width * zoom) / 2;
  return { zoom, pan: { x: Math.max(x, margin), y: margin } };
}

export const minZoom = 0.02;
export const maxZoom = 3;
/** The least zoom at which names are drawn large enough to read. */
export const readableZoom = 0.72;
/** The most a whole graph is magnified to fit (a small graph stays at about its natural size). */
export const fitZoom = 1.2;

export function edgeElement(
  edge: DrawnEdge,
  index: number,
  marks: { changed: boolean; labelled: boolean },
): ElementDefinition {
  const o = edge.observed;
  const classes = [
    marks.changed ? 'changed' : '',
    marks.labelled ? 'labelled' : '',
    edge.denied === 0 ? '' : edge.denied === edge.requests ? 'denied' : 'some-denied',
    edge.passthrough > 0 ? 'passthrough' : '',
    edge.blackhole > 0 ? 'blackhole' : '',
    edge.mtls < edge.requests ? 'plaintext' : 'mtls',
    o ? 'observed' : '',
    o && errorRatio(o) > 0 ? 'observed-errors' : '',
    (o?.drift ?? 0) > 0 || edge.observedOnly ? 'drift' : '',
  ];
  const label = edgeLabel(edge);
  return {
    group: 'edges',
    data: {
      id: `edge:${index}`,
      source: edge.source,
      target: edge.target,
      weight: Math.min(4, 1 + Math.log10(Math.max(1, edge.requests, o?.requests ?? 0))),
      label,
    },
    classes: classes.filter(Boolean).join(' '),
  };
}

/** How each kind of node is drawn (carried in each node's data: one style rule serves them all). */
const looks: Record<DrawnNode['kind'], { color: string; shape: string; size: number }> = {
  namespace: { color: '#5b7fa8', shape: 'round-rectangle', size: 40 },
  workload: { color: '#2f6db5', shape: 'ellipse', size: 22 },
  gateway: { color: '#7b3fa3', shape: 'diamond', size: 28 },
  waypoint: { color: '#14877a', shape: 'hexagon', size: 27 },
  external: { color: '#6b6b6b', shape: 'round-rectangle', size: 22 },
  passthrough: { color: '#d9730d', shape: 'octagon', size: 30 },
  blackhole: { color: '#222222', shape: 'octagon', size: 30 },
};
