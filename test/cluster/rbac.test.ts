/**
 * The controller with only the deployment's permissions (deploy/rbac.yaml bound to its ServiceAccount),
 * against a real API server: it applies, writes status, prunes and holds its Lease, and is never refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import { runKfmesh } from '../cli-process.ts';
import { eventually, leaderArgs, startController, type RunningController } from '../controller-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';

const account = 'system:serviceaccount:kfmesh-system:kfmesh-controller';
const ns = 'kubeflow-user-example-com';

describe('the controller with only the ClusterRole and Role of deploy/', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: RunningController;

  before(async () => {
    server = await TestApiServer.start({ users: [account] });
    const rbac = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map((d) => {
      const o = d.toJS() as KubeObject;
      return o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'
        ? o
        : { ...o, metadata: { ...o.metadata, namespace: 'kfmesh-system' } };
    });
    const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
    await server.create([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kfmesh-system' } },
      ...rbac,
      ...example.filter(
        (o) =>
          o.kind === 'Namespace' ||
          o.kind === 'ConfigMap' ||
          (o.kind === 'Profile' && o.metadata.name === ns) ||
          (o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris'),
      ),
    ]);
    controller = startController(server.kubeconfigFor(account), leaderArgs);
  });
  after(async () => {
    if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
    await server?.stop();
  });

  test('applies, writes MeshReady, prunes, leads; no request is forbidden', async () => {
    const get = (path: string) => server.client.request<KubeObject>('GET', path);
    const vs = `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/sklearn-iris`;
    const context = { context: () => controller.log() };
    await eventually('the VirtualService', () => get(vs), context);
    for (const path of [
      `/apis/serving.kserve.io/v1beta1/namespaces/${ns}/inferenceservices/sklearn-iris`,
      `/apis/kubeflow.org/v1/profiles/${ns}`,
    ])
      await eventually(
        `MeshReady on ${path}`,
        async () => {
          const o = (await get(path)) as { status?: { conditions?: { type: string; status: string }[] } };
          return o.status?.conditions?.find((c) => c.type === 'MeshReady' && c.status === 'True');
        },
        context,
      );
    await server.client.request(
      'DELETE',
      `/apis/serving.kserve.io/v1beta1/namespaces/${ns}/inferenceservices/sklearn-iris`,
    );
    await eventually(
      'the VirtualService pruned',
      async () => {
        try {
          await get(vs);
          return undefined;
        } catch (error) {
          return error instanceof KubeApiError && error.status === 404 ? true : undefined;
        }
      },
      context,
    );
    assert.match(controller.log(), /"msg":"leading"/);
    assert.doesNotMatch(controller.log(), / 403 Forbidden|is forbidden/);
    assert.equal(await controller.terminate(), 0);
  });
});
