/**
 * The console's observed traffic and its folding: metrics become edges between the graph's nodes (one
 * reporter counted), each series explained or drift; folding namespaces sums the graph's edges and the
 * observed ones, keeps traffic inside a folded namespace off the edges, and labels what it draws; and the
 * findings of observed traffic (drift, failing edges).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import { observedGraph } from '../../src/console/observed.ts';
import { observedFindings } from '../../src/console/observed-findings.ts';
import { drawnGraph, edgeLabel, namespaceNodeId } from '../../src/console/collapse.ts';
import { ConsoleModel } from '../../src/console/api.ts';
import type { Sample } from '../../src/load/exposition.ts';
import type { MeshGraph, ObservedGraph } from '../../src/console/wire.ts';
import { namespace, pod, service } from '../mesh-fixtures.ts';

const objects = [
  namespace('a'),
  namespace('b'),
  pod('a', 'client'),
  pod('b', 'server'),
  service('b', 'server'),
];
const mesh = compileMesh(Snapshot.of(objects));

/** Every report of a request from a/client-0 to b's server, as samples. */
function reports(value: number): Sample[] {
  const result = traceRequest(mesh, { from: 'a/client-0', url: 'http://server.b.svc.cluster.local/' });
  return result.telemetry.map((r, i) => ({ name: r.metric, labels: r.labels, value, line: i + 1 }));
}

describe('observed traffic on the console', () => {
  test('both reporters explained, counted once on the edge, with a rate over a known window', () => {
    const samples = reports(120);
    assert.equal(samples.length, 2, 'the client and the server report it');
    const graph = observedGraph(mesh, [], { samples, source: 'm.prom', seconds: 60, unit: 'line' });
    assert.deepEqual(graph.summary, { explained: 2, drift: 0, untraced: 0 });
    assert.equal(graph.edges.length, 1);
    const edge = graph.edges[0];
    assert.equal(edge?.source, 'a/client-0');
    assert.equal(edge?.target, 'b/server-0');
    assert.equal(edge?.requests, 120, "the client's count, not both reporters' sum");
    assert.deepEqual(edge?.codes, { '2xx': 120 });
    assert.equal(edge?.rate, 2);
    assert.deepEqual(graph.nodes, [], 'both ends are workloads of the configuration');
  });

  test('a series from a workload the configuration lacks is not traced, and its node is added to the graph', () => {
    const [client] = reports(5);
    assert.ok(client);
    const stranger: Sample = { ...client, labels: { ...client.labels, source_workload: 'stranger' } };
    const graph = observedGraph(mesh, [], { samples: [stranger], source: 'm.prom', unit: 'line' });
    assert.equal(graph.summary.untraced, 1, 'its client is not in the configuration');
    assert.deepEqual(
      graph.nodes.map((n) => n.id),
      ['a/stranger'],
    );
  });

  test('folding: edges between namespaces summed, traffic inside one kept on its node, labels', () => {
    const graph: MeshGraph = {
      nodes: [
        { id: 'a/x', kind: 'workload', namespace: 'a', name: 'x' },
        { id: 'a/y', kind: 'workload', namespace: 'a', name: 'y' },
        { id: 'b/z', kind: 'workload', namespace: 'b', name: 'z' },
        { id: 'PassthroughCluster', kind: 'passthrough', name: 'PassthroughCluster' },
      ],
      edges: [
        {
          source: 'a/x',
          target: 'a/y',
          requests: 4,
          allowed: 4,
          denied: 0,
          failed: 0,
          passthrough: 0,
          blackhole: 0,
          mtls: 4,
        },
        {
          source: 'a/x',
          target: 'b/z',
          requests: 3,
          allowed: 1,
          denied: 2,
          failed: 0,
          passthrough: 0,
          blackhole: 0,
          mtls: 3,
          deniedBy: 'b/deny',
        },
        {
          source: 'a/y',
          target: 'b/z',
          requests: 5,
          allowed: 5,
          denied: 0,
          failed: 0,
          passthrough: 0,
          blackhole: 0,
          mtls: 5,
        },
        {
          source: 'a/y',
          target: 'PassthroughCluster',
          requests: 2,
          allowed: 2,
          denied: 0,
          failed: 0,
          passthrough: 2,
          blackhole: 0,
          mtls: 0,
        },
      ],
      totals: {
        requests: 14,
        allowed: 12,
        denied: 2,
        failed: 0,
        passthrough: 2,
        blackhole: 0,
        mtls: 12,
        untraceable: 0,
      },
    };
    const observed: ObservedGraph = {
      source: 'm.prom',
      edges: [
        {
          source: 'a/x',
          target: 'a/y',
          requests: 9,
          codes: { '2xx': 9 },
          connections: 0,
          drift: 0,
          series: [],
        },
        {
          source: 'a/y',
          target: 'b/z',
          requests: 10,
          codes: { '2xx': 6, '5xx': 4 },
          connections: 0,
          drift: 1,
          series: [],
        },
      ],
      nodes: [],
      summary: { explained: 1, drift: 1, untraced: 0 },
    };
    const folded = drawnGraph(graph, observed, new Set());
    const a = folded.nodes.find((n) => n.id === namespaceNodeId('a'));
    assert.deepEqual([a?.members, a?.inside, a?.observedInside], [2, 4, 9]);
    const ab = folded.edges.find(
      (e) => e.source === namespaceNodeId('a') && e.target === namespaceNodeId('b'),
    );
    assert.ok(ab);
    assert.deepEqual([ab.requests, ab.denied, ab.memberEdges.length, ab.deniedBy], [8, 2, 2, undefined]);
    assert.equal(edgeLabel(ab), '10 req · 40% err · drift');
    const out = folded.edges.find((e) => e.target === 'PassthroughCluster');
    assert.equal(edgeLabel(out ?? ab), '2');

    const open = drawnGraph(graph, observed, new Set(['a']));
    assert.ok(open.nodes.some((n) => n.id === 'a/x'));
    const xz = open.edges.find((e) => e.source === 'a/x' && e.target === namespaceNodeId('b'));
    assert.equal(xz?.deniedBy, 'b/deny', 'a drawn edge of one edge keeps who denied it');
    assert.equal(drawnGraph(graph, undefined, 'all').edges.length, 4);
  });

  test('the API answers what was observed, and says how to give metrics when none were', async () => {
    const samples = reports(1);
    const model = new ConsoleModel(Snapshot.of(objects), {
      source: 'test',
      observed: { samples, source: 'm.prom', unit: 'line' },
    });
    const answer = await model.answer('/api/observed', new URLSearchParams());
    assert.equal(answer.status, 200);
    assert.equal((answer.body as ObservedGraph).summary.explained, 2);
    const without = new ConsoleModel(Snapshot.of(objects), { source: 'test' });
    const refused = await without.answer('/api/observed', new URLSearchParams());
    assert.equal(refused.status, 404);
    assert.match((refused.body as { error: string }).error, /--metrics FILE or --prometheus URL/);
  });
});

describe('observed traffic as findings', () => {
  /** The server's reports of the request, answered with `code` (as if the server's proxy had said so). */
  function answered(code: string, value: number, line: number): Sample[] {
    return reports(value).map((s) => ({
      ...s,
      labels: { ...s.labels, response_code: code },
      line: s.line + line,
    }));
  }

  test('a healthy edge is no finding; one failing half or more is KFM802, an error when all fail', () => {
    const healthy = observedGraph(mesh, [], { samples: reports(50), source: 'm.prom', unit: 'line' });
    assert.deepEqual(observedFindings(mesh, healthy), []);
    const cases: [number, number, string | undefined][] = [
      [60, 40, undefined],
      [40, 60, 'warning'],
      [0, 100, 'error'],
    ];
    for (const [ok, failed, severity] of cases) {
      const samples = [...answered('200', ok, 0), ...answered('503', failed, 10)].filter((s) => s.value > 0);
      const graph = observedGraph(mesh, [], { samples, source: 'm.prom', unit: 'line' });
      // (A 503 this configuration does not give is drift too: KFM801, tested below.)
      const found = observedFindings(mesh, graph).filter((f) => f.code === 'KFM802');
      assert.deepEqual(
        found.map((f) => f.severity),
        severity ? [severity] : [],
        `${ok} answered, ${failed} failed`,
      );
      if (!severity) continue;
      assert.equal(found[0]?.code, 'KFM802');
      assert.deepEqual(found[0]?.traffic, { source: 'a/client-0', target: 'b/server-0' });
      assert.match(
        found[0]?.message ?? '',
        new RegExp(
          `^a/client-0 → b/server-0: ${failed}% of 100 observed requests failed \\(${failed} 5xx\\)`,
        ),
      );
      assert.deepEqual(found[0]?.object, { group: '', kind: 'Pod', namespace: 'a', name: 'client-0' });
    }
  });

  test('drift is KFM801 with the labels on which the nearest trace differs', () => {
    const [client] = reports(7);
    assert.ok(client);
    const other: Sample = {
      ...client,
      labels: { ...client.labels, connection_security_policy: 'mutual_tls', request_protocol: 'grpc' },
    };
    const graph = observedGraph(mesh, [], { samples: [other], source: 'm.prom', unit: 'line' });
    assert.equal(graph.summary.drift, 1);
    const [finding, ...rest] = observedFindings(mesh, graph);
    assert.deepEqual(rest, []);
    assert.equal(finding?.code, 'KFM801');
    assert.equal(finding?.severity, 'warning');
    assert.match(
      finding?.message ?? '',
      /^a\/client-0 → b\/server-0: 1 series \(7 requests or connections\) that this configuration does not produce; the nearest trace differs in /,
    );
    assert.ok(finding?.evidence?.some((e) => e.startsWith('nearest: ')));
  });
});
