/**
 * The console graph's layout, on random graphs: every node placed once, one to a cell, inside its
 * namespace's band; bands apart; the map's rows by role (outside and ingress, the platform, the users);
 * every edge's route meets no node but its two ends, and its label no node or node name; the same graph
 * gives the same layout. And the sample of the request matrix a large platform's graph is drawn from.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { edgeRoute, gridLayout, Tier, type Layout, type LayoutNode } from '../../src/console/layout.ts';
import { sampleMatrix, sideBySide } from '../../src/console/graph.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { drawnGraph } from '../../src/console/collapse.ts';
import { boxesOverlap, inset, lineMeetsBox, type Box } from '../geometry.ts';

const kinds = ['workload', 'gateway', 'waypoint', 'namespace'] as const;

interface Case {
  nodes: LayoutNode[];
  edges: { source: string; target: string }[];
  tiers: Map<string, Tier>;
  widths: Map<string, number>;
}

/**
 * Graphs of up to 13 namespaces (some folded into one node, of random widths), each in a random row of the
 * map, with what is outside the mesh, and random edges between distinct nodes.
 */
const graphs = fc
  .record({
    specs: fc.array(
      fc.record({
        namespace: fc.integer({ min: 0, max: 12 }),
        kind: fc.constantFrom(...kinds),
        width: fc.integer({ min: 20, max: 260 }),
      }),
      { minLength: 1, maxLength: 120 },
    ),
    tiers: fc.array(fc.constantFrom(Tier.outside, Tier.platform, Tier.users), {
      minLength: 13,
      maxLength: 13,
    }),
    links: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 150 }),
  })
  .map(({ specs, tiers, links }): Case => {
    const folded = new Set(specs.filter((s) => s.kind === 'namespace').map((s) => s.namespace));
    const nodes: LayoutNode[] = [];
    const widths = new Map<string, number>();
    specs.forEach((s, i) => {
      const namespace = `ns-${s.namespace}`;
      if (folded.has(s.namespace)) {
        const id = `namespace:${namespace}`;
        if (widths.has(id)) return;
        nodes.push({ id, kind: 'namespace', namespace, name: namespace });
        widths.set(id, s.width);
        return;
      }
      nodes.push({ id: `${namespace}/n${i}`, kind: s.kind, namespace, name: `n${i}` });
      widths.set(`${namespace}/n${i}`, 30);
    });
    nodes.push({ id: 'PassthroughCluster', kind: 'passthrough', name: 'PassthroughCluster' });
    nodes.push({ id: 'external', kind: 'external', name: 'external' });
    const edges = links
      .map(([a, b]) => ({
        source: nodes[a % nodes.length]?.id ?? '',
        target: nodes[b % nodes.length]?.id ?? '',
      }))
      .filter((e) => e.source !== e.target);
    return { nodes, edges, tiers: new Map(tiers.map((t, i) => [`ns-${i}`, t])), widths };
  });

function layoutOf(c: Case): Layout {
  return gridLayout({
    nodes: c.nodes,
    edges: c.edges,
    tier: (namespace) => c.tiers.get(namespace) ?? Tier.platform,
    width: (node) => c.widths.get(node.id) ?? 30,
    titleWidth: (namespace) => 8 * namespace.length,
  });
}

/** A node's box as drawn (40 px high), and with the name under it (a workload's, 18 px more). */
function boxOf(layout: Layout, node: LayoutNode, width: number, named: boolean): Box {
  const p = layout.positions.get(node.id) ?? { x: 0, y: 0 };
  return { x1: p.x - width / 2, y1: p.y - 20, x2: p.x + width / 2, y2: p.y + 20 + (named ? 18 : 0) };
}

describe('the map layout', () => {
  test('every node once, one to a cell, inside its band; bands apart; rows by role', () => {
    fc.assert(
      fc.property(graphs, (c) => {
        const layout = layoutOf(c);
        assert.equal(layout.positions.size, c.nodes.length);
        const cells = new Set([...layout.cells.values()].map((p) => `${p.row},${p.column}`));
        assert.equal(cells.size, c.nodes.length);
        for (const node of c.nodes) {
          const p = layout.positions.get(node.id);
          assert.ok(p && p.x > 0 && p.y > 0 && p.x < layout.size.width && p.y < layout.size.height);
          if (node.kind === 'namespace') continue;
          const band = layout.bands.find((b) => b.namespace === (node.namespace ?? ''));
          assert.ok(band, `no band for ${node.id}`);
          assert.ok(p.x > band.x && p.x < band.x + band.width && p.y > band.y && p.y < band.y + band.height);
        }
        for (const a of layout.bands)
          for (const b of layout.bands)
            if (a !== b)
              assert.ok(
                !boxesOverlap(
                  { x1: a.x, y1: a.y, x2: a.x + a.width, y2: a.y + a.height },
                  { x1: b.x, y1: b.y, x2: b.x + b.width, y2: b.y + b.height },
                ),
                `${a.namespace} and ${b.namespace} overlap`,
              );
        const tier = (n: LayoutNode) =>
          n.namespace ? (c.tiers.get(n.namespace) ?? Tier.platform) : Tier.outside;
        const row = (n: LayoutNode) => layout.cells.get(n.id)?.row ?? -1;
        for (const a of c.nodes)
          for (const b of c.nodes) if (tier(a) < tier(b)) assert.ok(row(a) < row(b), `${a.id} above ${b.id}`);
      }),
    );
  });

  test('no route meets a node but its ends; no label meets a node or its name', () => {
    fc.assert(
      fc.property(graphs, (c) => {
        const layout = layoutOf(c);
        const boxes = c.nodes.map((n) => ({
          id: n.id,
          body: inset(boxOf(layout, n, c.widths.get(n.id) ?? 30, false), 1),
          named: boxOf(layout, n, Math.min(layout.pitchX - 40, 160), n.kind !== 'namespace'),
        }));
        for (const e of c.edges) {
          const route = edgeRoute(layout, e.source, e.target);
          assert.ok(route);
          const line = [layout.positions.get(e.source), ...route.points, layout.positions.get(e.target)];
          for (const b of boxes) {
            if (b.id === e.source || b.id === e.target) continue;
            assert.ok(
              !lineMeetsBox(line as { x: number; y: number }[], b.body),
              `${e.source} → ${e.target} through ${b.id}`,
            );
          }
          const label = {
            x1: route.label.x - 60,
            y1: route.label.y - 8,
            x2: route.label.x + 60,
            y2: route.label.y + 8,
          };
          for (const b of boxes)
            assert.ok(!boxesOverlap(label, b.named), `label of ${e.source} → ${e.target} over ${b.id}`);
        }
      }),
    );
  });

  test('the same graph, the same layout and routes', () => {
    fc.assert(
      fc.property(graphs, (c) => {
        const [a, b] = [layoutOf(c), layoutOf(c)];
        assert.deepEqual(a, b);
        for (const e of c.edges)
          assert.deepEqual(edgeRoute(a, e.source, e.target), edgeRoute(b, e.source, e.target));
      }),
    );
  });

  test("the example's map, folded and unfolded, is about a screen's shape", () => {
    const { sidecar } = sideBySide(Snapshot.of(examplePlatform()));
    for (const expanded of [new Set<string>(), 'all' as const]) {
      const drawn = drawnGraph(sidecar, undefined, expanded);
      const { size } = gridLayout({ nodes: drawn.nodes, edges: drawn.edges, width: () => 200 });
      assert.ok(
        size.width / size.height > 0.6 && size.width / size.height < 3.5,
        `${size.width} × ${size.height}`,
      );
    }
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
