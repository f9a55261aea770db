/** The console's API model: what it keeps in memory stays bounded whatever versions traces name. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConsoleModel } from '../../src/console/api.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { Snapshot } from '../../src/load/snapshot.ts';

describe('ConsoleModel', () => {
  test('meshes of non-default Istio versions: the two used last are kept, no more', () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    const url = encodeURIComponent('http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/');
    const from = 'kubeflow-user-example-com/curl-inside-mesh';
    for (const istio of ['1.20', '1.21', '1.22', '1.23', '1.24', '1.25', '1.29']) {
      const answer = model.answer(
        '/api/trace',
        new URLSearchParams(`from=${from}&url=${url}&istio=${istio}`),
      );
      assert.equal(answer.status, 200, istio);
      assert.ok(model.cachedOtherMeshes <= 2, `${model.cachedOtherMeshes} meshes kept after ${istio}`);
    }
    assert.equal(model.cachedOtherMeshes, 2);
    const bad = model.answer('/api/trace', new URLSearchParams(`from=${from}&url=${url}&istio=9.9`));
    assert.equal(bad.status, 400);
  });

  test('the migration plan: its steps, a state graph with the edges its step changed, a bad step refused', () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    const plan = model.answer('/api/plan', new URLSearchParams());
    assert.equal(plan.status, 200);
    const view = plan.body as { steps: { number: number; stage: string }[]; errors: number };
    assert.equal(view.errors, 0);
    const restart = view.steps.find((s) => s.stage === 'restart')?.number ?? 0;
    const graph = model.answer('/api/plan/graph', new URLSearchParams(`step=${restart}`));
    assert.equal(graph.status, 200);
    const body = graph.body as { changed: string[]; graph: { edges: { source: string; target: string }[] } };
    assert.ok(body.changed.length > 0);
    const edges = new Set(body.graph.edges.map((e) => `${e.source} ${e.target}`));
    assert.ok(body.changed.every((k) => edges.has(k)));
    const start = model.answer('/api/plan/graph', new URLSearchParams('step=0')).body as {
      changed: string[];
    };
    assert.deepEqual(start.changed, []);
    for (const step of ['x', '-1', String(view.steps.length + 1), '1.5'])
      assert.equal(model.answer('/api/plan/graph', new URLSearchParams(`step=${step}`)).status, 400, step);
  });
});
