/**
 * Two `kfmesh controller --leader-elect` replicas against a real API server: one leads and reconciles,
 * the other stands by; when the leader stops, it gives the Lease up and the other takes over.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { kfmeshBin } from '../cli-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Replica {
  process: ChildProcess;
  log: () => string;
}

describe('leader election between two controller replicas', apiServerTestOptions(), () => {
  let server: TestApiServer;
  const replicas: Replica[] = [];

  const start = (): Replica => {
    let log = '';
    const child = spawn(
      process.execPath,
      [
        kfmeshBin,
        'controller',
        '--kubeconfig',
        server.kubeconfig,
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
    child.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
    });
    const replica = { process: child, log: () => log };
    replicas.push(replica);
    return replica;
  };
  const leading = (r: Replica) => /"msg":"leading"/.test(r.log());
  async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(200);
    }
  }

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
    await until('a to lead', () => leading(a));
    const b = start();
    await until('b to wait', () => /"msg":"waiting for the leader lease"/.test(b.log()));
    await sleep(5000); // more than two retry periods: b must still not lead
    assert.equal(leading(b), false, b.log());
    const lease = await server.client.request<{ spec: { holderIdentity: string } }>(
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/kfmesh-system/leases/kfmesh-controller',
    );
    assert.match(lease.spec.holderIdentity, /_[0-9a-f]{8}$/);
    assert.ok(a.log().includes(lease.spec.holderIdentity));

    const exited = new Promise<number | null>((r) => a.process.once('exit', r));
    a.process.kill('SIGTERM');
    assert.equal(await exited, 0, a.log().slice(-1500));
    // The lease was given up: b takes it within a retry period or two, not after the 15 s lease duration.
    const since = Date.now();
    await until('b to lead', () => leading(b), 10_000);
    assert.ok(Date.now() - since < 10_000);
  });
});
