/** The console's API model: bounded memory whatever versions traces name, and objects shown without tenant secrets. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConsoleModel, type ConsoleAnswer } from '../../src/console/api.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import type { KubeObject } from '../../src/model/object.ts';
import type { ModeGraph, PlanGraph, PlanProgress, PlanView } from '../../src/console/wire.ts';
import { differencesShown } from '../../src/console/differences.ts';

describe('ConsoleModel', () => {
  test('meshes of non-default Istio versions: the two used last are kept, no more', async () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    const url = encodeURIComponent('http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/');
    const from = 'kubeflow-user-example-com/curl-inside-mesh';
    for (const istio of ['1.20', '1.21', '1.22', '1.23', '1.24', '1.25', '1.29']) {
      const answer = await model.answer(
        '/api/trace',
        new URLSearchParams(`from=${from}&url=${url}&istio=${istio}`),
      );
      assert.equal(answer.status, 200, istio);
      assert.ok(model.cachedOtherMeshes <= 2, `${model.cachedOtherMeshes} meshes kept after ${istio}`);
    }
    assert.equal(model.cachedOtherMeshes, 2);
    const bad = await model.answer('/api/trace', new URLSearchParams(`from=${from}&url=${url}&istio=9.9`));
    assert.equal(bad.status, 400);
  });

  test('the migration plan: computed by a worker, its progress meanwhile, then its steps and state graphs', async () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    try {
      const none = new URLSearchParams();
      const first = await model.answer('/api/plan', none);
      assert.equal(first.status, 202, 'the first answer is the progress, not the plan');
      assert.equal((await model.answer('/api/plan/graph', new URLSearchParams('step=0'))).status, 202);
      // Other requests are answered while the worker plans.
      assert.equal((await model.answer('/api/summary', none)).status, 200);
      const seen: PlanProgress[] = [];
      let answer: ConsoleAnswer = first;
      while (answer.status === 202) {
        seen.push(answer.body);
        await new Promise((r) => setTimeout(r, 50));
        answer = await model.answer('/api/plan', none);
      }
      assert.equal(answer.status, 200);
      const view = answer.body as PlanView;
      assert.equal(view.errors, 0);
      assert.ok(view.steps.every((s) => s.simulated));
      // The progress said what it did, listed the steps once ordered, and counted the states simulated.
      assert.ok(seen.some((p) => /^tracing /.test(p.doing)));
      const listed = seen.filter((p) => p.steps.length > 0);
      assert.ok(listed.length > 0, 'the steps were listed before the plan was done');
      assert.ok(listed.every((p) => p.steps.length === view.steps.length && p.total === view.steps.length));
      assert.ok(listed.some((p) => p.steps.some((s) => s.simulated) && p.steps.some((s) => !s.simulated)));
      const counts = seen.map((p) => p.simulated);
      assert.deepEqual(
        counts,
        [...counts].sort((a, b) => a - b),
        'progress only goes forward',
      );
      const restart = view.steps.find((s) => s.stage === 'restart')?.number ?? 0;
      const graph = await model.answer('/api/plan/graph', new URLSearchParams(`step=${restart}`));
      assert.equal(graph.status, 200);
      const body = graph.body as PlanGraph;
      assert.ok(body.changed.length > 0);
      const edges = new Set(body.graph.edges.map((e) => `${e.source} ${e.target}`));
      assert.ok(body.changed.every((k) => edges.has(k)));
      const start = (await model.answer('/api/plan/graph', new URLSearchParams('step=0'))).body as PlanGraph;
      assert.deepEqual(start.changed, []);
      for (const step of ['x', '-1', String(view.steps.length + 1), '1.5'])
        assert.equal(
          (await model.answer('/api/plan/graph', new URLSearchParams(`step=${step}`))).status,
          400,
          step,
        );
    } finally {
      await model.close();
    }
  });

  test("each graph says its namespaces' modes, and the ambient one why a namespace stays in sidecar mode", async () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    const mode = async (m: string) =>
      new Map(
        (
          (await model.answer('/api/graph', new URLSearchParams({ mode: m }))).body as ModeGraph
        ).graph.namespaces?.map((n) => [n.name, n]),
      );
    const [sidecar, ambient] = [await mode('sidecar'), await mode('ambient')];
    assert.equal(sidecar.get('ml-research')?.mode, 'sidecar');
    assert.equal(ambient.get('ml-research')?.mode, 'ambient');
    assert.equal(ambient.get('ml-research')?.why, undefined);
    assert.equal(ambient.get('kubeflow-user-example-com')?.mode, 'sidecar');
    assert.match(ambient.get('kubeflow-user-example-com')?.why ?? '', /^stays in sidecar mode: it .*Knative/);
    assert.equal(sidecar.get('auth')?.mode, 'outside the mesh');
  });

  test("a closed model's plan is a failed answer that says why", async () => {
    const model = new ConsoleModel(Snapshot.of(examplePlatform()), { source: '<example>' });
    assert.equal((await model.answer('/api/plan', new URLSearchParams())).status, 202);
    await model.close();
    const answer = await model.answer('/api/plan', new URLSearchParams());
    assert.equal(answer.status, 500);
    assert.match((answer.body as { error: string }).error, /reloaded or closed/);
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
  const shown = async (kind: string, namespace: string, name: string, group = '') =>
    (await model.answer('/api/object', new URLSearchParams({ group, kind, namespace, name }))).body as {
      yaml: string;
      hidden: string[];
    };

  test("a tenant's ConfigMap: keys, not values; no binaryData; only the mesh's annotations", async () => {
    const { yaml, hidden } = await shown('ConfigMap', tenant, 'db');
    assert.doesNotMatch(yaml, /hunter2|aHVudGVyMg|last-applied/);
    assert.match(yaml, /db_password: \(hidden\)/);
    assert.match(yaml, /sidecar\.istio\.io\/inject: "false"/);
    assert.equal(hidden.length, 3, hidden.join('\n'));
  });

  test("the platform's settings are shown whole (the mesh config)", async () => {
    const { yaml, hidden } = await shown('ConfigMap', 'istio-system', 'istio');
    assert.match(yaml, /mesh: /);
    assert.deepEqual(hidden, []);
  });

  test('env values are hidden, their names and sources are not; ports stay', async () => {
    const { yaml, hidden } = await shown('Deployment', tenant, 'app', 'apps');
    assert.doesNotMatch(yaml, /sk-live-123/);
    assert.match(yaml, /name: API_KEY\n\s+value: \(hidden\)/);
    assert.match(yaml, /secretKeyRef/);
    assert.match(yaml, /containerPort: 8080/);
    assert.deepEqual(hidden, ['the values of 1 environment variable(s)']);
  });
});

test("a plan step's differences, filtered by severity and by words in what happens or the example", () => {
  const d = (severity: 'error' | 'warning' | 'note', cause: string, example: string) => ({
    severity,
    cause,
    count: 1,
    example,
  });
  const all = [
    d('error', 'denied → answered', 'GET http://a/'),
    d('warning', 'answered → PassthroughCluster', 'GET http://B/x'),
    d('note', 'plaintext → mTLS', 'GET http://c/'),
  ];
  assert.deepEqual(differencesShown(all, '', ''), all);
  assert.deepEqual(differencesShown(all, 'warning', ''), [all[1]]);
  assert.deepEqual(differencesShown(all, '', '  passthrough '), [all[1]]);
  assert.deepEqual(differencesShown(all, '', 'http://b'), [all[1]], 'words match the example, in any case');
  assert.deepEqual(differencesShown(all, 'error', 'mtls'), []);
});
