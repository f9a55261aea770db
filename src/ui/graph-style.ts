/** The mesh graph's cytoscape stylesheet: how each kind of node and each state of an edge is drawn. */
import type cytoscape from 'cytoscape';
import { EdgeColour } from '../console/palette.ts';

// Why long: it is the graph's stylesheet, one selector block per kind of node and edge state.
export function style(large: boolean): cytoscape.StylesheetJson {
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
        'text-margin-y': 19,
        'text-margin-x': (band: cytoscape.NodeSingular) => Number(band.data('titleShift')),
        'min-zoomed-font-size': 4,
      },
    },
    {
      selector: 'edge',
      style: {
        width: 'data(weight)',
        'line-color': EdgeColour.plain,
        'target-arrow-color': EdgeColour.plain,
        'target-arrow-shape': large ? 'none' : 'triangle',
        // Routed around the nodes by the layout (its bend points are each edge's own style).
        'curve-style': 'segments',
        'edge-distances': 'node-position',
        'segment-weights': 'data(weights)',
        'segment-distances': 'data(distances)',
        'arrow-scale': 0.8,
        opacity: 0.7,
        'z-index-compare': 'manual',
        'z-index': 5,
      },
    },
    // A node's traffic to itself (a gateway's second pass, observed) has no route: a loop beside it.
    { selector: 'edge:loop', style: { 'curve-style': 'bezier', 'loop-direction': '45deg' } },
    {
      // Edge labels are off until asked for: the hovered or selected edge, or all with "Labels" on.
      selector: 'edge[label].labelled, edge[label].hovered, edge[label].selected-edge',
      style: {
        label: 'data(label)',
        'font-size': 11,
        color: '#1d1d1d',
        'text-background-color': '#ffffff',
        'text-background-opacity': 0.9,
        'text-background-padding': '2px',
        'text-background-shape': 'roundrectangle',
        'text-rotation': 'none',
        'min-zoomed-font-size': 6,
        'text-events': 'yes',
      },
    },
    { selector: 'edge.plaintext', style: { 'line-style': large ? 'solid' : 'dashed' } },
    {
      selector: 'edge.some-denied',
      style: { 'line-color': EdgeColour.someDenied, 'target-arrow-color': EdgeColour.someDenied },
    },
    {
      selector: 'edge.denied',
      style: { 'line-color': EdgeColour.denied, 'target-arrow-color': EdgeColour.denied, opacity: 0.9 },
    },
    {
      selector: 'edge.passthrough',
      style: {
        'line-color': EdgeColour.passthrough,
        'target-arrow-color': EdgeColour.passthrough,
        opacity: 0.9,
      },
    },
    {
      selector: 'edge.blackhole',
      style: { 'line-color': EdgeColour.blackhole, 'target-arrow-color': EdgeColour.blackhole },
    },
    {
      selector: 'edge.observed',
      style: {
        'underlay-color': '#1b9e77',
        'underlay-opacity': 0.35,
        'underlay-padding': 4,
        'line-style': 'solid',
        opacity: 1,
        'z-index': 8,
      } as cytoscape.Css.Edge,
    },
    { selector: 'edge.observed-errors', style: { 'underlay-color': '#d62728' } as cytoscape.Css.Edge },
    {
      selector: 'edge.drift',
      style: {
        'line-color': '#8e44ad',
        'target-arrow-color': '#8e44ad',
        'line-style': 'dashed',
        'line-dash-pattern': [8, 4],
        'underlay-color': '#8e44ad',
        opacity: 1,
      } as cytoscape.Css.Edge,
    },
    {
      selector: 'node.namespace',
      style: {
        width: 'data(width)',
        height: 40,
        'text-wrap': 'wrap',
        'text-valign': 'center',
        'text-halign': 'center',
        'text-margin-y': 0,
        color: '#ffffff',
        'font-size': 12,
        'font-weight': 'bold',
        label: 'data(label)',
      },
    },
    // A folded namespace's mode on its border: ambient dashed teal, half-way (both labels) dotted orange.
    {
      selector: 'node.mode-ambient',
      style: { 'border-width': 3, 'border-style': 'dashed', 'border-color': '#14877a' },
    },
    {
      selector: 'node.mode-half',
      style: { 'border-width': 3, 'border-style': 'dotted', 'border-color': '#d9730d' },
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
        width: 3,
        'line-color': EdgeColour.changed,
        'target-arrow-color': EdgeColour.changed,
        'target-arrow-shape': 'triangle',
        'z-index': 15,
        opacity: 1,
      },
    },
    {
      selector: 'edge.on-path',
      style: {
        width: 5,
        'line-color': EdgeColour.onPath,
        'target-arrow-color': EdgeColour.onPath,
        'target-arrow-shape': 'triangle',
        'z-index': 20,
        opacity: 1,
      },
    },
    {
      // The selected edge: thick and dark over everything, its ends named; the rest is faded.
      selector: 'edge.selected-edge',
      style: {
        width: 6,
        'line-color': EdgeColour.selected,
        'target-arrow-color': EdgeColour.selected,
        'target-arrow-shape': 'triangle',
        'z-index': 30,
        opacity: 1,
      },
    },
    { selector: 'edge.hovered', style: { 'z-index': 25, opacity: 1 } },
    // The proxy of the hop focused in the hop table.
    { selector: 'node.hop-mark', style: { 'border-width': 6, 'border-color': '#111111', 'z-index': 30 } },
  ];
}
