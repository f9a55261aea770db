/**
 * The controller rides out an API server restart in the middle of a sync: its watches fail and restart
 * with backoff, failed applies are retried, and in the end every InferenceService has its objects, once,
 * and changes made after the restart are seen. (The controller runs in this process, so the test can
 * restart the server right after its first apply.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { Controller } from '../../src/controller/controller.ts';
import { runKfmesh } from '../cli-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';
import { eventually } from '../controller-process.ts';

const ns = 'kubeflow-user-example-com';
const models = 40;

describe('the controller across an API server restart', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: Controller | undefined;
  const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
  const iris = example.find((o) => o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris');
  const model = (name: string) =>
    JSON.parse(JSON.stringify(iris).replaceAll('sklearn-iris', name)) as KubeObject;
  const virtualServices = async () =>
    (
      await server.client.request<{ items: KubeObject[] }>(
        'GET',
        `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices`,
      )
    ).items;

  before(async () => {
    server = await TestApiServer.start();
    await server.create([
      ...example.filter((o) => o.kind === 'Namespace' || o.kind === 'ConfigMap'),
      ...Array.from({ length: models }, (_, i) => model(`model-${i}`)),
    ]);
  });
  after(async () => {
    await controller?.stop();
    await server?.stop();
  });

  test('restarted mid-sync: every model gets its VirtualService once; later changes are seen', async () => {
    const log: string[] = [];
    let restarted: Promise<void> | undefined;
    controller = new Controller(KubeClient.fromKubeconfig(server.kubeconfig), {
      mode: 'sidecar',
      log: (level, message, fields) => {
        log.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
        if (message === 'applied' && !restarted) restarted = server.restartApiServer(2000);
      },
    });
    await controller.start();
    await eventually('the first apply', () => (restarted ? true : undefined));
    await restarted;
    const context = { ms: 60_000, context: () => log.slice(-20).join('\n') };
    const all = await eventually(
      `${models} VirtualServices`,
      async () => {
        const list = await virtualServices();
        return list.length === models ? list : undefined;
      },
      context,
    );
    assert.deepEqual(
      all.map((v) => v.metadata.name).sort(),
      Array.from({ length: models }, (_, i) => `model-${i}`).sort(),
    );
    for (const vs of all) {
      assert.equal(vs.metadata.ownerReferences?.length, 1);
      assert.equal(vs.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
    }
    assert.ok(log.some((l) => /watch failed; restarting|reconcile failed/.test(l)));
    // The watches are back: a model created now gets its VirtualService.
    await server.create([model('after-restart')]);
    await eventually(
      'the new VirtualService',
      async () =>
        (await virtualServices()).some((v) => v.metadata.name === 'after-restart') ? true : undefined,
      context,
    );
  });
});
