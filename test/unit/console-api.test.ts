/** The console's API model: bounded memory whatever versions traces name, and objects shown without tenant secrets. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConsoleModel } from '../../src/console/api.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import type { KubeObject } from '../../src/model/object.ts';

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

describe('/api/object shows what matters to the mesh, never a tenant secret', () => {
  const tenant = 'kubeflow-user-example-com';
  const secretConfig: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'db',
      namespace: tenant,
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"db_password":"hunter2"}}',
        'sidecar.istio.io/inject': 'false',
      },
    },
    data: { db_password: 'hunter2' },
    binaryData: { key: 'aHVudGVyMg==' },
  };
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app', namespace: tenant },
    spec: {
      selector: { matchLabels: { app: 'app' } },
      template: {
        metadata: { labels: { app: 'app' } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'app:1',
              env: [
                { name: 'API_KEY', value: 'sk-live-123' },
                { name: 'FROM', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
              ],
              ports: [{ containerPort: 8080 }],
            },
          ],
        },
      },
    },
  };
  const model = new ConsoleModel(Snapshot.of([...examplePlatform(), secretConfig, deployment]), {
    source: '<test>',
  });
  const shown = (kind: string, namespace: string, name: string, group = '') =>
    model.answer('/api/object', new URLSearchParams({ group, kind, namespace, name })).body as {
      yaml: string;
      hidden: string[];
    };

  test("a tenant's ConfigMap: keys, not values; no binaryData; only the mesh's annotations", () => {
    const { yaml, hidden } = shown('ConfigMap', tenant, 'db');
    assert.doesNotMatch(yaml, /hunter2|aHVudGVyMg|last-applied/);
    assert.match(yaml, /db_password: \(hidden\)/);
    assert.match(yaml, /sidecar\.istio\.io\/inject: "false"/);
    assert.equal(hidden.length, 3, hidden.join('\n'));
  });

  test("the platform's settings are shown whole (the mesh config)", () => {
    const { yaml, hidden } = shown('ConfigMap', 'istio-system', 'istio');
    assert.match(yaml, /mesh: /);
    assert.deepEqual(hidden, []);
  });

  test('env values are hidden, their names and sources are not; ports stay', () => {
    const { yaml, hidden } = shown('Deployment', tenant, 'app', 'apps');
    assert.doesNotMatch(yaml, /sk-live-123/);
    assert.match(yaml, /name: API_KEY\n\s+value: \(hidden\)/);
    assert.match(yaml, /secretKeyRef/);
    assert.match(yaml, /containerPort: 8080/);
    assert.deepEqual(hidden, ['the values of 1 environment variable(s)']);
  });
});
