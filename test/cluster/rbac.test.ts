/**
 * The controller with only the deployment's permissions (deploy/rbac.yaml bound to its ServiceAccount),
 * against a real API server: it applies, writes status, prunes and holds its Lease, and is never refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import { kfmeshBin, runKfmesh } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const account = 'system:serviceaccount:kfmesh-system:kfmesh-controller';
const ns = 'kubeflow-user-example-com';

describe('the controller with only the ClusterRole and Role of deploy/', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: ChildProcess;
  let log = '';

  async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const value = await check().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}; controller log:\n${log.slice(-3000)}`);
      await sleep(200);
    }
  }

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
    controller = spawn(
      process.execPath,
      [
        kfmeshBin,
        'controller',
        '--kubeconfig',
        server.kubeconfigFor(account),
        '--leader-elect',
        '--leader-election-namespace',
        'kfmesh-system',
        '--metrics-bind-address',
        '0',
        '--health-probe-bind-address',
        '0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    controller.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
    });
  });
  after(async () => {
    if (controller && controller.exitCode === null) controller.kill('SIGKILL');
    await server?.stop();
  });

  test('applies, writes MeshReady, prunes, leads; no request is forbidden', async () => {
    const get = (path: string) => server.client.request<KubeObject>('GET', path);
    const vs = `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/sklearn-iris`;
    await eventually('the VirtualService', () => get(vs));
    for (const path of [
      `/apis/serving.kserve.io/v1beta1/namespaces/${ns}/inferenceservices/sklearn-iris`,
      `/apis/kubeflow.org/v1/profiles/${ns}`,
    ])
      await eventually(`MeshReady on ${path}`, async () => {
        const o = (await get(path)) as { status?: { conditions?: { type: string; status: string }[] } };
        return o.status?.conditions?.find((c) => c.type === 'MeshReady' && c.status === 'True');
      });
    await server.client.request(
      'DELETE',
      `/apis/serving.kserve.io/v1beta1/namespaces/${ns}/inferenceservices/sklearn-iris`,
    );
    await eventually('the VirtualService pruned', async () => {
      try {
        await get(vs);
        return undefined;
      } catch (error) {
        return error instanceof KubeApiError && error.status === 404 ? true : undefined;
      }
    });
    assert.match(log, /"msg":"leading"/);
    assert.doesNotMatch(log, /forbidden|403/i);
    const exited = new Promise<number | null>((r) => controller.once('exit', r));
    controller.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
