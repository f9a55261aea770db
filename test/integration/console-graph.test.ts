/**
 * The console's graph of traced traffic, on the seed's two published cases: before the fix the in-mesh
 * client's request ends in PassthroughCluster; after it, it crosses the local gateway to the model. A
 * denied request (ambient cases) marks the edge into what refused it, and its path ends there.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { parseIstioVersion } from '../../src/mesh/istio-version.ts';
import { meshGraph, PassthroughNode, sideBySide } from '../../src/console/graph.ts';
import { projectRoot } from '../conformance/cases.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { requestMatrix } from '../../src/verify/equivalence.ts';

const traceCase = (file: string, dir = 'traces') => {
  const c = parse(readFileSync(join(projectRoot, 'test/data/conformance', dir, file), 'utf8')) as {
    args: string[];
    input: KubeObject[];
  };
  const arg = (flag: string) => (c.args.includes(flag) ? (c.args[c.args.indexOf(flag) + 1] ?? '') : '');
  const headers = Object.fromEntries(
    c.args
      .filter((_, i) => ['-H', '--header'].includes(c.args[i - 1] ?? ''))
      .map((h) => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]),
  );
  const version = parseIstioVersion(arg('--istio-version'));
  const mesh = compileMesh(Snapshot.of(c.input), version ? { istioVersion: version } : {});
  const request = { from: arg('--from'), url: arg('--url'), method: arg('--method') || 'GET', headers };
  return { mesh, request };
};

describe('the graph of traced traffic', () => {
  test('before the fix: client → PassthroughCluster, counted as passthrough, plaintext', () => {
    const { mesh, request } = traceCase('01-kserve-vs-without-mesh-passthrough.yaml');
    const graph = meshGraph(mesh, [request]);
    assert.deepEqual(
      graph.edges.map((e) => [e.source, e.target]),
      [[request.from, PassthroughNode]],
    );
    const [edge] = graph.edges;
    assert.equal(edge?.passthrough, 1);
    assert.equal(edge?.mtls, 0);
    assert.equal(graph.nodes.find((n) => n.id === PassthroughNode)?.kind, 'passthrough');
    assert.equal(graph.totals.passthrough, 1);
  });

  test('after the fix: client → local gateway → the model, allowed, no passthrough', () => {
    const { mesh, request } = traceCase('02-kserve-vs-with-mesh-local-gateway.yaml');
    const graph = meshGraph(mesh, [request, request]);
    const from = (id: string) => graph.edges.find((e) => e.source === id);
    const first = from(request.from);
    // The local gateway is the ingress gateway's pods (the knative-local-gateway Service selects them).
    assert.equal(first?.target, 'istio-system/istio-ingressgateway');
    assert.equal(graph.nodes.find((n) => n.id === first?.target)?.kind, 'gateway');
    const second = from(first?.target ?? '');
    assert.match(second?.target ?? '', /^kserve-test\/sklearn-v2-iris-predictor/);
    assert.equal(graph.edges.length, 2);
    assert.ok(graph.edges.every((e) => e.requests === 2 && e.allowed === 2 && e.passthrough === 0));
    // Gateway pods carry no tlsMode label, so auto mTLS sends plaintext to them; the gateway uses mTLS onward.
    assert.deepEqual([first?.mtls, second?.mtls], [0, 2]);
    assert.equal(graph.totals.passthrough, 0);
    assert.equal(
      graph.nodes.some((n) => n.id === PassthroughNode),
      false,
    );
  });

  test('denied at a waypoint: the edge into the waypoint is denied, naming the policy, and the path ends there', () => {
    const { mesh, request } = traceCase('02-waypoint-denies-other-user.yaml', 'traces-ambient');
    const graph = meshGraph(mesh, [request]);
    const denied = graph.edges.filter((e) => e.deniedBy !== undefined);
    assert.equal(denied.length, 1, JSON.stringify(graph.edges));
    const [edge] = denied;
    assert.equal(graph.nodes.find((n) => n.id === edge?.target)?.kind, 'waypoint');
    assert.equal(edge?.denied, 1);
    assert.equal(
      graph.edges.some((e) => e.source === edge?.target),
      false,
    );
    assert.equal(graph.totals.denied, 1);
  });

  test('denied by ztunnel (an L7-only ALLOW without a waypoint): the edge into the workload is denied', () => {
    const { mesh, request } = traceCase('01-l7-only-allow-without-waypoint.yaml', 'traces-ambient');
    const graph = meshGraph(mesh, [request]);
    const denied = graph.edges.filter((e) => e.deniedBy !== undefined);
    assert.equal(denied.length, 1, JSON.stringify(graph));
    assert.equal(graph.nodes.find((n) => n.id === denied[0]?.target)?.kind, 'workload');
    assert.equal(denied[0]?.source, request.from);
  });

  test('a request that cannot be traced is counted, not drawn; the same input gives the same graph', () => {
    const { mesh, request } = traceCase('02-kserve-vs-with-mesh-local-gateway.yaml');
    const graph = meshGraph(mesh, [request, { ...request, from: 'nowhere/nobody' }]);
    assert.equal(graph.totals.untraceable, 1);
    assert.equal(graph.totals.requests, 1);
    assert.deepEqual(meshGraph(mesh, [request]), meshGraph(mesh, [request]));
  });
});

describe('the graph of the example platform', () => {
  test("the equivalence check's request matrix: every request counted, the in-mesh client reaches the models through the local gateway", () => {
    const mesh = compileMesh(Snapshot.of(examplePlatform()));
    const requests = requestMatrix(mesh, mesh);
    const graph = meshGraph(mesh, requests);
    assert.equal(graph.totals.requests + graph.totals.untraceable, requests.length);
    assert.equal(graph.totals.untraceable, 0);
    const client = 'kubeflow-user-example-com/curl-inside-mesh';
    const out = graph.edges.filter((e) => e.source === client).map((e) => e.target);
    assert.ok(out.includes('istio-system/istio-ingressgateway'), out.join(', '));
    assert.ok(graph.nodes.some((n) => n.kind === 'gateway'));
    assert.ok(new Set(graph.nodes.map((n) => n.namespace)).size >= 5);
    for (const e of graph.edges) assert.equal(e.allowed + e.denied + e.failed, e.requests);
  });
});

describe('sidecar and ambient side by side', () => {
  test('the example and its migration, from the same requests: the model is reached in both, through a waypoint in ambient mode where the migration put one', () => {
    const both = sideBySide(Snapshot.of(examplePlatform()));
    assert.equal(both.sidecar.totals.requests + both.sidecar.totals.untraceable, both.requests);
    assert.equal(both.ambient.totals.requests + both.ambient.totals.untraceable, both.requests);
    assert.ok(both.sidecar.nodes.every((n) => n.kind !== 'waypoint'));
    assert.ok(
      both.ambient.nodes.some((n) => n.kind === 'waypoint'),
      JSON.stringify(both.ambient.nodes.map((n) => n.id)),
    );
    // Ambient mode has no sidecars: nothing leaves the mesh through a client's PassthroughCluster that didn't before.
    assert.ok(both.ambient.totals.passthrough <= both.sidecar.totals.passthrough);
    assert.deepEqual(sideBySide(Snapshot.of(examplePlatform())), both);
  });
});
