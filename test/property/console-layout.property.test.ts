/**
 * The console graph's layout: every node placed once, no two on one spot, inside its namespace's band;
 * within a band, senders left of gateways left of waypoints left of answering workloads; bands don't
 * overlap and pack to about a screen's shape; the same graph gives the same layout. And the sample of
 * the request matrix a large platform's graph is drawn from.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { layeredLayout, Spacing } from '../../src/console/layout.ts';
import { sampleMatrix, sideBySide } from '../../src/console/graph.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import type { GraphNode, MeshGraph } from '../../src/console/wire.ts';

const kinds = ['workload', 'gateway', 'waypoint'] as const;

/** A graph of `namespaces` namespaces with random nodes, and edges making some workloads answer. */
const graphs = fc
  .array(
    fc.record({
      namespace: fc.integer({ min: 0, max: 12 }),
      kind: fc.constantFrom(...kinds),
      answers: fc.boolean(),
    }),
    { minLength: 1, maxLength: 120 },
  )
  .map((specs) => {
    const nodes: GraphNode[] = specs.map((s, i) => ({
      id: `ns-${s.namespace}/n${i}`,
      kind: s.kind,
      namespace: `ns-${s.namespace}`,
      name: `n${i}`,
    }));
    nodes.push({ id: 'PassthroughCluster', kind: 'passthrough', name: 'PassthroughCluster' });
    const edges = specs.flatMap((s, i) =>
      s.answers ? [{ source: 'PassthroughCluster', target: `ns-${s.namespace}/n${i}` }] : [],
    );
    return { nodes, edges } as unknown as MeshGraph;
  });

describe('the layered layout', () => {
  test('every node once, no two on one spot, inside its band; bands apart', () => {
    fc.assert(
      fc.property(graphs, (graph) => {
        const { positions, bands } = layeredLayout(graph);
        assert.equal(positions.size, graph.nodes.length);
        const spots = new Set([...positions.values()].map((p) => `${p.x},${p.y}`));
        assert.equal(spots.size, positions.size);
        for (const node of graph.nodes) {
          const band = bands.find((b) => b.namespace === (node.namespace ?? ''));
          const p = positions.get(node.id);
          assert.ok(band && p);
          assert.ok(
            p.x >= band.x && p.x <= band.x + band.width && p.y >= band.y && p.y <= band.y + band.height,
          );
        }
        for (const a of bands)
          for (const b of bands) {
            if (a === b) continue;
            const apart =
              a.x + a.width < b.x || b.x + b.width < a.x || a.y + a.height < b.y || b.y + b.height < a.y;
            assert.ok(apart, `${a.namespace} and ${b.namespace} overlap`);
          }
      }),
    );
  });

  test('within a band, columns by role: senders, gateways, waypoints, answering workloads', () => {
    fc.assert(
      fc.property(graphs, (graph) => {
        const { positions } = layeredLayout(graph);
        const answers = new Set(graph.edges.map((e) => e.target));
        const rank = (n: GraphNode) =>
          n.kind === 'gateway' ? 1 : n.kind === 'waypoint' ? 2 : answers.has(n.id) ? 3 : 0;
        for (const a of graph.nodes)
          for (const b of graph.nodes)
            if (a.namespace === b.namespace && a.namespace && rank(a) < rank(b))
              assert.ok((positions.get(a.id)?.x ?? 0) < (positions.get(b.id)?.x ?? 0));
      }),
    );
  });

  test('a role column wraps after perColumn nodes; the same graph, the same layout', () => {
    fc.assert(
      fc.property(graphs, (graph) => {
        const layout = layeredLayout(graph);
        const byColumn = new Map<string, number>();
        for (const node of graph.nodes) {
          const p = layout.positions.get(node.id);
          const key = `${node.namespace ?? ''}|${p?.x}`;
          byColumn.set(key, (byColumn.get(key) ?? 0) + 1);
        }
        for (const count of byColumn.values()) assert.ok(count <= Spacing.perColumn);
        assert.deepEqual(layeredLayout(graph), layout);
      }),
    );
  });

  test("the example's graph packs into about a screen's shape", () => {
    const { sidecar } = sideBySide(Snapshot.of(examplePlatform()));
    const { bands } = layeredLayout(sidecar);
    const width = Math.max(...bands.map((b) => b.x + b.width)) - Math.min(...bands.map((b) => b.x));
    const height = Math.max(...bands.map((b) => b.y + b.height)) - Math.min(...bands.map((b) => b.y));
    assert.ok(width / height > 0.6 && width / height < 3, `${width} × ${height}`);
  });
});

describe('the sample of a large request matrix', () => {
  const shapes = Array.from({ length: 50 }, (_, i) => ({
    url: `http://s${i}.ns.svc.cluster.local/`,
    method: 'GET',
    headers: {},
  }));
  const clients = Array.from({ length: 40 }, (_, i) => `ns/c${i}`);
  const external = Array.from({ length: 30 }, (_, i) => ({
    from: 'external',
    url: `http://h${i}/`,
    method: 'GET',
    headers: {},
  }));

  test('within budget: the whole matrix, clients × shapes then the external requests', () => {
    const all = sampleMatrix(clients, shapes, external, 10_000);
    assert.equal(all.length, clients.length * shapes.length + external.length);
    assert.deepEqual(all[0], { from: 'ns/c0', ...shapes[0] });
    assert.deepEqual(all.at(-1), external.at(-1));
  });

  test('over budget: at most the budget, every client sends, together they reach every shape', () => {
    fc.assert(
      fc.property(fc.integer({ min: 60, max: 1500 }), (budget) => {
        const sample = sampleMatrix(clients, shapes, external, budget);
        assert.ok(sample.length <= budget || sample.length === clients.length + Math.floor(budget / 10));
        const senders = new Set(sample.map((r) => r.from));
        for (const c of clients) assert.ok(senders.has(c));
        const perClient = Math.max(1, Math.floor((budget - Math.floor(budget / 10)) / clients.length));
        if (perClient * clients.length >= shapes.length) {
          const reached = new Set(sample.filter((r) => r.from !== 'external').map((r) => r.url));
          assert.equal(reached.size, shapes.length);
        }
        assert.deepEqual(sampleMatrix(clients, shapes, external, budget), sample);
      }),
    );
  });
});
