/**
 * What the controller guarantees when the API server or its permissions fail it, against a real API
 * server with `kfmesh controller` as a child process:
 *
 * - a kind whose list is forbidden is never taken for an empty one: nothing is pruned, `/readyz` says
 *   which kind and why, the log says so and an Event is posted on the controller's Pod; once the list is
 *   allowed again it syncs;
 * - started with the server down, it retries discovery with backoff (and says so in the log and on
 *   `/readyz`), answers SIGTERM, and syncs once the server is up;
 * - a leader whose connection stalls (a loopback TCP proxy that stops forwarding) stops leading at its
 *   renew deadline, before the other replica can take the lease: one leader at a time;
 * - a metrics or probe port already in use is a usage error (exit 2).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh } from '../cli-process.ts';
import {
  eventually,
  leaderArgs,
  logged,
  sleep,
  startController,
  type RunningController,
} from '../controller-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { apiServerTestOptions, freePort, TestApiServer } from '../kube-apiserver.ts';

const account = 'system:serviceaccount:kfmesh-system:kfmesh-controller';
const ns = 'kubeflow-user-example-com';
const vsPath = `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/sklearn-iris`;
const rolePath = '/apis/rbac.authorization.k8s.io/v1/clusterroles/kfmesh-controller';

const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
const rbac = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map((d) => {
  const o = d.toJS() as KubeObject;
  return o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'
    ? o
    : { ...o, metadata: { ...o.metadata, namespace: 'kfmesh-system' } };
});
const platform = example.filter(
  (o) =>
    o.kind === 'Namespace' ||
    o.kind === 'ConfigMap' ||
    (o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris'),
);

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The deploy/ ClusterRole with `verb` taken from `resource`'s rule, or as it is. */
function clusterRole(without?: { resource: string; verb: string }): KubeObject {
  const role = rbac.find((o) => o.kind === 'ClusterRole');
  assert.ok(role);
  const rules = (role['rules'] as Rule[]).map((r) =>
    without && r.resources.includes(without.resource) && r.resources.length === 1
      ? { ...r, verbs: r.verbs.filter((v) => v !== without.verb) }
      : r,
  );
  return { ...role, rules };
}

async function readyz(port: number): Promise<{ code: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { code: res.status, body: await res.text() };
}

async function exists(server: TestApiServer, path: string): Promise<boolean> {
  return server.client.request('GET', path).then(
    () => true,
    () => false,
  );
}

const probeArgs = (port: number) => [
  '--metrics-bind-address',
  '0',
  '--health-probe-bind-address',
  `127.0.0.1:${port}`,
];

describe('kfmesh controller when a list is forbidden or the server is away', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: RunningController | undefined;

  before(async () => {
    server = await TestApiServer.start({ users: [account] });
    await server.create([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kfmesh-system' } },
      ...rbac,
      ...platform,
    ]);
  });
  after(async () => {
    if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
    await server?.stop();
  });

  test('a forbidden list: nothing pruned, not ready, a log line and an Event; syncs once allowed', async () => {
    // First with the full role: the model gets its VirtualService.
    const port = await freePort();
    const env = { POD_NAME: 'kfmesh-controller-0', POD_NAMESPACE: 'kfmesh-system' };
    controller = startController(server.kubeconfigFor(account), probeArgs(port), [], env);
    let running = controller;
    const context = { ms: 60_000, context: () => running.log() };
    await eventually(
      'the VirtualService',
      async () => ((await exists(server, vsPath)) ? true : undefined),
      context,
    );
    assert.equal(await running.terminate(), 0);

    // Then without `list` on InferenceServices.
    await server.client.request('PUT', rolePath, {
      body: clusterRole({ resource: 'inferenceservices', verb: 'list' }),
    });
    controller = startController(server.kubeconfigFor(account), probeArgs(port), [], env);
    running = controller;
    await eventually(
      'the forbidden list logged',
      () =>
        /"msg":"list forbidden; nothing is pruned until it succeeds"/.test(running.log()) ? true : undefined,
      context,
    );
    const notReady = await eventually(
      '/readyz naming the kind',
      async () => {
        const r = await readyz(port);
        return /serving\.kserve\.io\/InferenceService/.test(r.body) ? r : undefined;
      },
      context,
    );
    assert.equal(notReady.code, 503);
    assert.match(notReady.body, /forbidden/);
    // Every other kind has listed by now; give a wrongly started controller time to prune.
    await sleep(3000);
    assert.ok(await exists(server, vsPath), 'the VirtualService was pruned');
    assert.doesNotMatch(running.log(), /"msg":"caches synced"|"msg":"pruned"|"msg":"applied"/);
    const events = await server.client.request<{
      items: { reason: string; involvedObject: { name: string } }[];
    }>('GET', '/api/v1/namespaces/kfmesh-system/events');
    assert.ok(
      events.items.some((e) => e.reason === 'ListForbidden' && e.involvedObject.name === env.POD_NAME),
      JSON.stringify(events.items.map((e) => e.reason)),
    );

    // Allowed again: it syncs (the list is retried with backoff), becomes ready, and the object stays.
    await server.client.request('PUT', rolePath, { body: clusterRole() });
    await logged(running, 'caches synced', context);
    await eventually('ready', async () => ((await readyz(port)).code === 200 ? true : undefined), context);
    assert.ok(await exists(server, vsPath));

    // Synced, then the list is forbidden again and the server restarts: the re-list fails, the kind is
    // marked failing (not ready, said why), and nothing is pruned.
    await server.client.request('PUT', rolePath, {
      body: clusterRole({ resource: 'inferenceservices', verb: 'list' }),
    });
    await server.restartApiServer(1000);
    await eventually(
      '/readyz naming the failing re-list',
      async () => {
        const r = await readyz(port);
        return r.code === 503 && /latest list failed: serving\.kserve\.io\/InferenceService/.test(r.body)
          ? true
          : undefined;
      },
      context,
    );
    await sleep(2000);
    assert.ok(await exists(server, vsPath), 'the VirtualService was pruned after a failed re-list');
    assert.doesNotMatch(running.log(), /"msg":"pruned"/);
    await server.client.request('PUT', rolePath, { body: clusterRole() });
    await eventually(
      'ready again',
      async () => ((await readyz(port)).code === 200 ? true : undefined),
      context,
    );
    assert.equal(await running.terminate(), 0);
  });

  test('started with the server down: retries discovery, answers SIGTERM, and syncs once the server is up', async () => {
    await server.stopApiServer();
    const port = await freePort();
    controller = startController(server.kubeconfig, probeArgs(port));
    let running = controller;
    const context = { ms: 90_000, context: () => running.log() };
    await eventually(
      'discovery failing, said on /readyz',
      async () => {
        const r = await readyz(port);
        return r.code === 503 && /discovery failed/.test(r.body) ? true : undefined;
      },
      context,
    );
    // The log is written asynchronously: the line may land just after /readyz says so.
    await logged(running, 'discovery failed; retrying', context);
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    // A first SIGTERM while it retries stops it cleanly.
    assert.equal(await running.terminate(), 0, running.log().slice(-2000));

    // Again, and this time the server comes up.
    controller = startController(server.kubeconfig, probeArgs(port));
    running = controller;
    await eventually(
      'discovery failing',
      () => (/discovery failed/.test(running.log()) ? true : undefined),
      context,
    );
    await server.startApiServer();
    await logged(running, 'caches synced', context);
    await eventually('ready', async () => ((await readyz(port)).code === 200 ? true : undefined), context);
    assert.ok(await exists(server, vsPath));
    // Its retries back off: fewer discovery attempts than seconds it waited.
    const attempts = running.log().match(/"msg":"discovery failed; retrying"/g)?.length ?? 0;
    assert.ok(attempts >= 1);
    assert.equal(await running.terminate(), 0);
  });

  test('a metrics or probe port already in use is a usage error (exit 2)', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      for (const flag of ['--metrics-bind-address', '--health-probe-bind-address']) {
        const other =
          flag === '--metrics-bind-address' ? '--health-probe-bind-address' : '--metrics-bind-address';
        const run = startController(server.kubeconfig, [flag, `127.0.0.1:${port}`, other, '0']);
        const code = await new Promise<number | null>((r) => run.process.once('exit', r));
        assert.equal(code, 2, run.log());
        assert.match(run.log(), new RegExp(`${flag}: cannot listen on 127\\.0\\.0\\.1:${port}`));
        assert.doesNotMatch(run.log(), /\n\s+at /);
      }
    } finally {
      taken.close();
    }
  });
});

/**
 * A loopback TCP proxy that can freeze: connections stay open, nothing more is forwarded either way, and
 * new connections are accepted but never answered, as when a network path stalls.
 */
class FreezableProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #frozen = false;
  port = 0;

  constructor(target: number) {
    this.#server = createServer((client) => {
      this.#sockets.add(client);
      client.on('close', () => this.#sockets.delete(client));
      client.on('error', () => undefined);
      if (this.#frozen) {
        client.pause();
        return;
      }
      const upstream = connect(target, '127.0.0.1');
      this.#sockets.add(upstream);
      upstream.on('close', () => this.#sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    const address = this.#server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  freeze(): void {
    this.#frozen = true;
    for (const s of this.#sockets) {
      s.unpipe();
      s.pause();
    }
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise((r) => this.#server.close(r));
  }
}

/** The epoch-ms time of the first log line with this message. */
function loggedAt(log: string, message: string): number | undefined {
  for (const line of log.split('\n')) {
    if (!line.includes(`"msg":"${message}"`)) continue;
    const time = (JSON.parse(line) as { time?: number }).time;
    if (time !== undefined) return time;
  }
  return undefined;
}

describe('kfmesh controller with a stalled connection to the API server', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let proxy: FreezableProxy;
  const replicas: RunningController[] = [];

  before(async () => {
    server = await TestApiServer.start();
    await server.create([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kfmesh-system' } },
      ...platform,
    ]);
    proxy = new FreezableProxy(server.port);
    await proxy.listen();
  });
  after(async () => {
    for (const r of replicas) if (r.process.exitCode === null) r.process.kill('SIGKILL');
    await proxy?.close();
    await server?.stop();
  });

  test('the stalled leader stops leading and writing before the other replica leads', async () => {
    const bLog = { of: () => '' };
    const a = startController(server.kubeconfigVia(proxy.port), leaderArgs);
    replicas.push(a);
    const context = { ms: 60_000, context: () => `A:\n${a.log()}\nB:\n${bLog.of()}` };
    await eventually('A leading', () => (/"msg":"leading"/.test(a.log()) ? true : undefined), context);
    await eventually('A applied', async () => ((await exists(server, vsPath)) ? true : undefined), context);
    const standby = startController(server.kubeconfig, leaderArgs);
    replicas.push(standby);
    bLog.of = () => standby.log();
    await eventually(
      'B waiting',
      () => (/"msg":"waiting for the leader lease"/.test(standby.log()) ? true : undefined),
      context,
    );
    proxy.freeze();
    const frozenAt = Date.now();
    const exitA = await eventually('A exits', () => a.process.exitCode ?? undefined, context);
    assert.equal(exitA, 1, 'a replica that lost its lease exits 1');
    await eventually('B leading', () => (/"msg":"leading"/.test(standby.log()) ? true : undefined), context);
    const lostA = loggedAt(a.log(), 'stopping');
    const leadB = loggedAt(standby.log(), 'leading');
    assert.ok(lostA !== undefined && leadB !== undefined);
    assert.ok(lostA < leadB, `A stopped at ${lostA}, B led at ${leadB}: two leaders at once`);
    // A gave up within its renew deadline (10 s) of the freeze, plus one retry period.
    assert.ok(lostA - frozenAt <= 13_000, `A stopped ${lostA - frozenAt} ms after the freeze`);
    assert.match(a.log(), /"reason":"lost the leader lease"/);
    assert.equal(await standby.terminate(), 0);
  });
});
