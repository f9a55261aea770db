/**
 * The controller rides out an API server restart in the middle of a sync: its watches fail and restart
 * with backoff, failed applies are retried, and in the end every InferenceService has its objects, once,
 * and changes made after the restart are seen. Once with the controller in this process, so the test can
 * restart the server right after its first apply; once as `kfmesh controller`, as it is deployed, restarted
 * as soon as its log shows an apply.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { Controller } from '../../src/controller/controller.ts';
import { runKfmesh } from '../cli-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';
import {
  eventually,
  logged,
  noServerArgs,
  sleep,
  startController,
  type RunningController,
} from '../controller-process.ts';

const ns = 'kubeflow-user-example-com';
const models = 40;
const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
const iris = example.find((o) => o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris');
const model = (name: string) =>
  JSON.parse(JSON.stringify(iris).replaceAll('sklearn-iris', name)) as KubeObject;

/** A server with the example's namespaces and configuration and `models` copies of its first model. */
async function serverWithModels(): Promise<TestApiServer> {
  const server = await TestApiServer.start();
  await server.create([
    ...example.filter((o) => o.kind === 'Namespace' || o.kind === 'ConfigMap'),
    ...Array.from({ length: models }, (_, i) => model(`model-${i}`)),
  ]);
  return server;
}

async function virtualServices(server: TestApiServer): Promise<KubeObject[]> {
  const path = `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices`;
  return (await server.client.request<{ items: KubeObject[] }>('GET', path)).items;
}

describe('the controller across an API server restart', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: Controller | undefined;

  before(async () => {
    server = await serverWithModels();
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
        const list = await virtualServices(server);
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
        (await virtualServices(server)).some((v) => v.metadata.name === 'after-restart') ? true : undefined,
      context,
    );
  });
});

describe('kfmesh controller (the command) across an API server restart', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: RunningController | undefined;
  const names = async () => (await virtualServices(server)).map((v) => v.metadata.name ?? '');

  before(async () => {
    server = await serverWithModels();
  });
  after(async () => {
    if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
    await server?.stop();
  });

  test('restarted while it applies: every model gets its VirtualService; later changes are seen', async () => {
    controller = startController(server.kubeconfig, noServerArgs);
    const running = controller;
    const context = { ms: 90_000, context: () => running.log() };
    await logged(running, 'applied', context);
    await server.restartApiServer(2000);
    const all = await eventually(
      `${models} VirtualServices`,
      async () => {
        const list = await names();
        return list.length === models ? list : undefined;
      },
      context,
    );
    assert.deepEqual(all.sort(), Array.from({ length: models }, (_, i) => `model-${i}`).sort());
    await server.create([model('after-restart')]);
    await eventually(
      'the new VirtualService',
      async () => ((await names()).includes('after-restart') ? true : undefined),
      context,
    );
    assert.equal(await running.terminate(), 0, running.log().slice(-2000));
  });

  test('killed while it starts (before its caches are synced): it syncs once the server is back', async () => {
    await server.create([model('while-starting')]);
    controller = startController(server.kubeconfig, noServerArgs);
    const running = controller;
    const context = { ms: 120_000, context: () => running.log() };
    await logged(running, 'starting');
    await server.stopApiServer('SIGKILL');
    await sleep(3000);
    await server.startApiServer();
    const wanted = [
      ...Array.from({ length: models }, (_, i) => `model-${i}`),
      'after-restart',
      'while-starting',
    ];
    const all = await eventually(
      `${wanted.length} VirtualServices`,
      async () => {
        const list = await names();
        return list.length === wanted.length ? list : undefined;
      },
      context,
    );
    assert.deepEqual(all.sort(), wanted.sort());
    assert.match(running.log(), /"msg":"caches synced"/);
    assert.doesNotMatch(running.log(), /"msg":"pruned"/);
    assert.equal(await running.terminate(), 0, running.log().slice(-2000));
  });
});
