/**
 * Two `kfmesh controller --leader-elect` replicas against a real API server: one leads and reconciles,
 * the other stands by; when the leader stops, it gives the Lease up and the other takes over.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';
import {
  eventually,
  leaderArgs,
  sleep,
  startController,
  type RunningController,
} from '../controller-process.ts';

describe('leader election between two controller replicas', apiServerTestOptions(), () => {
  let server: TestApiServer;
  const replicas: RunningController[] = [];
  const start = (): RunningController => {
    const replica = startController(server.kubeconfig, leaderArgs);
    replicas.push(replica);
    return replica;
  };
  const leading = (r: RunningController) => (/"msg":"leading"/.test(r.log()) ? true : undefined);

  before(async () => {
    server = await TestApiServer.start({ crds: false });
    await server.create([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kfmesh-system' } }]);
  });
  after(async () => {
    for (const r of replicas) if (r.process.exitCode === null) r.process.kill('SIGKILL');
    await server?.stop();
  });

  test('one leads, the other waits; the leader stops and the other takes over', async () => {
    const a = start();
    await eventually('a to lead', () => leading(a), { context: a.log });
    const b = start();
    await eventually('b to wait', () =>
      /"msg":"waiting for the leader lease"/.test(b.log()) ? true : undefined,
    );
    await sleep(5000); // more than two retry periods: b must still not lead
    assert.equal(leading(b), undefined, b.log());
    const lease = await server.client.request<{ spec: { holderIdentity: string } }>(
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/kfmesh-system/leases/kfmesh-controller',
    );
    assert.match(lease.spec.holderIdentity, /_[0-9a-f]{8}$/);
    assert.ok(a.log().includes(lease.spec.holderIdentity));

    assert.equal(await a.terminate(), 0, a.log().slice(-1500));
    // The lease was given up: b takes it at its next try, well before a's last renewal (at most 2 s before
    // SIGTERM) would have expired (15 s).
    await eventually('b to lead', () => leading(b), { ms: 10_000, context: b.log });
  });
});
