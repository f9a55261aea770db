/**
 * Layout benchmark: why the console's map is laid out by kfmesh's own code (console/layout.ts). The same
 * drawn graphs (the example, the real Kubeflow platform of ../shared/real, and a generated platform of 2,000
 * Profiles and 2,000 InferenceServices; namespaces folded, and every workload shown) laid out by it, by
 * ELK's layered layout with orthogonal edge routing (elkjs), and by fcose (cytoscape-fcose, headless; it
 * places nodes and routes no edge). Median of 3 runs (1 for the slow ones), in one process, and each
 * library's time against kfmesh's. fcose runs on graphs of at most 600 nodes: at 2,006 it took 77.6 s when
 * first measured, which rules it out; the table says so rather than wait.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import cytoscape from 'cytoscape';
import fcose from 'cytoscape-fcose';
import { gridLayout } from '../../src/console/layout.ts';
import { drawnGraph, type DrawnGraph } from '../../src/console/collapse.ts';
import { sideBySide } from '../../src/console/graph.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { parseManifests } from '../../src/load/parse.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { projectRoot } from '../conformance/cases.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';
import { printTable } from './harness.ts';

cytoscape.use(fcose);
// elkjs is CommonJS whose typings declare an ES default export: required, with the one method used here.
const Elk = createRequire(import.meta.url)('elkjs/lib/elk.bundled.js') as new () => {
  layout(graph: object): Promise<unknown>;
};
const elk = new Elk();
const real = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');

async function median(run: () => unknown, repeats: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] as number;
}

function elkLayout(d: DrawnGraph): Promise<unknown> {
  return elk.layout({
    id: 'root',
    layoutOptions: { 'elk.algorithm': 'layered', 'elk.edgeRouting': 'ORTHOGONAL', 'elk.direction': 'DOWN' },
    children: d.nodes.map((n) => ({ id: n.id, width: 60, height: 30 })),
    edges: d.edges.map((e, i) => ({ id: `e${i}`, sources: [e.source], targets: [e.target] })),
  });
}

function fcoseLayout(d: DrawnGraph): void {
  const cy = cytoscape({
    headless: true,
    styleEnabled: true,
    elements: [
      ...d.nodes.map((n) => ({ data: { id: n.id } })),
      ...d.edges.map((e, i) => ({ data: { id: `e${i}`, source: e.source, target: e.target } })),
    ],
  });
  cy.layout({ name: 'fcose', animate: false, randomize: true } as cytoscape.LayoutOptions).run();
  cy.destroy();
}

const platforms: [string, () => Snapshot][] = [
  ['example', () => Snapshot.of(examplePlatform())],
  ...(existsSync(real)
    ? [
        [
          'real Kubeflow platform (master)',
          () => new Snapshot(parseManifests({ name: real, text: readFileSync(real, 'utf8') })),
        ] as [string, () => Snapshot],
      ]
    : []),
  ['2,000 Profiles', () => Snapshot.of(kubeflowBenchPlatform(2000, 2000))],
];
const rows: (string | number)[][] = [];
for (const [name, snapshot] of platforms) {
  const { sidecar } = sideBySide(snapshot());
  for (const [grouping, expanded] of [
    ['namespaces', new Set<string>()],
    ['workloads', 'all'],
  ] as const) {
    const d = drawnGraph(sidecar, undefined, expanded);
    const slow = d.nodes.length > 600;
    const mine = await median(() => gridLayout({ nodes: d.nodes, edges: d.edges }), 3);
    const elkMs = await median(() => elkLayout(d), slow ? 1 : 3);
    const fcoseMs = slow ? undefined : await median(() => fcoseLayout(d), 3);
    rows.push([
      `${name}, ${grouping}`,
      d.nodes.length,
      d.edges.length,
      Math.round(mine * 10) / 10,
      Math.round(elkMs),
      (elkMs / mine).toFixed(0),
      fcoseMs === undefined ? 'not run (77.6 s at 2,006 nodes)' : Math.round(fcoseMs),
      fcoseMs === undefined ? '' : (fcoseMs / mine).toFixed(0),
    ]);
  }
}
printTable(
  'Console map layout: kfmesh (grid, routed channels) against ELK layered + orthogonal routing and fcose (Node, one run)',
  ['graph', 'nodes', 'edges', 'kfmesh ms', 'ELK ms', 'ELK / kfmesh', 'fcose ms', 'fcose / kfmesh'],
  rows,
);
