/**
 * The controller never lists, watches or caches the ConfigMaps tenants write (issue "Safe on what tenants
 * write"): a Profile's owner may create any number of large ConfigMaps in their namespace, and a
 * controller that cached them all was OOM-killed at start. Against a real API server with the example
 * platform: the controller starts, its cache holds N objects; then tenants add large ConfigMaps
 * (KFMESH_TENANT_CONFIGMAPS of 900 KB, default 100); a new controller caches the same N objects, and
 * still follows a platform setting that changes (KServe's ingress gateway). Both controllers' peak memory is printed (not a
 * pass/fail figure).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh } from '../cli-process.ts';
import {
  eventually,
  logged,
  noServerArgs,
  startController,
  type RunningController,
} from '../controller-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';

const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
const tenant = 'kubeflow-user-example-com';
const count = Number(process.env['KFMESH_TENANT_CONFIGMAPS'] ?? 100);

/** The objects the controller cached when it synced, from its log. */
function cachedObjects(controller: RunningController): number {
  const line = controller
    .log()
    .split('\n')
    .find((l) => l.includes('"msg":"caches synced"'));
  return Number(/"objects":(\d+)/.exec(line ?? '')?.[1] ?? NaN);
}

/** The process's peak resident memory (VmHWM), in MiB. */
function peakMiB(controller: RunningController): number {
  const status = readFileSync(`/proc/${controller.process.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

describe('tenant ConfigMaps stay out of the controller', apiServerTestOptions('current'), () => {
  let server: TestApiServer;
  before(async () => {
    server = await TestApiServer.start({ release: 'current' });
    // The platform's namespaces and settings, and one model (the server has no Notebook CRD).
    await server.create(
      example.filter(
        (o) =>
          o.kind === 'Namespace' ||
          o.kind === 'ConfigMap' ||
          (o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris'),
      ),
    );
  });
  after(async () => {
    await server?.stop();
  });

  test(
    `${count} ConfigMaps of 900 KB in a Profile's namespace change nothing it caches`,
    { timeout: 600_000 },
    async () => {
      // The first start writes the model's objects; the second finds the platform as it stays.
      const first = startController(server.kubeconfig, noServerArgs);
      await logged(first, 'caches synced', { ms: 60_000 });
      await logged(first, 'applied', { ms: 60_000 });
      assert.equal(await first.terminate(), 0);
      const baseline = startController(server.kubeconfig, noServerArgs);
      await logged(baseline, 'caches synced', { ms: 60_000 });
      const cached = cachedObjects(baseline);
      const before = peakMiB(baseline);
      assert.equal(await baseline.terminate(), 0);

      const value = 'x'.repeat(900 * 1024);
      for (let i = 0; i < count; i += 20)
        await server.create(
          Array.from({ length: Math.min(20, count - i) }, (_, j) => ({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `tenant-data-${i + j}`, namespace: tenant },
            data: { blob: value },
          })),
        );

      const second = startController(server.kubeconfig, noServerArgs);
      await logged(second, 'caches synced', { ms: 120_000 });
      assert.equal(cachedObjects(second), cached, 'the same objects as before the tenants wrote theirs');
      const after = peakMiB(second);
      console.log(
        `controller peak memory: ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB with ${count} tenant ConfigMaps of 900 KB (${((count * 900) / 1024).toFixed(0)} MiB in the cluster)`,
      );

      // A platform setting is still read: KServe's ingress gateway is the model's route's gateway.
      const path = '/api/v1/namespaces/kubeflow/configmaps/inferenceservice-config';
      const config = await server.client.request<KubeObject & { data: Record<string, string> }>('GET', path);
      const ingress = {
        ...JSON.parse(config.data['ingress'] ?? '{}'),
        ingressGateway: 'kubeflow/tenant-gateway',
      };
      await server.client.request('PUT', path, {
        body: { ...config, data: { ...config.data, ingress: JSON.stringify(ingress) } },
      });
      await eventually(
        'the VirtualService to take the new gateway',
        async () => {
          const vs = await server.client.request<{ spec: { gateways: string[] } }>(
            'GET',
            `/apis/networking.istio.io/v1/namespaces/${tenant}/virtualservices/sklearn-iris`,
          );
          return vs.spec.gateways.includes('kubeflow/tenant-gateway') ? true : undefined;
        },
        { context: () => second.log().slice(-3000) },
      );
      assert.equal(await second.terminate(), 0);
    },
  );
});
