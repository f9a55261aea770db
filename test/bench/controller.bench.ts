/**
 * The controller against a real API server (etcd and kube-apiserver 1.20, as in the cluster tests):
 *
 * - cold start: a cluster with `profiles` Profiles (each with its namespace) and `models` Serverless
 *   InferenceServices spread over them; from starting `kfmesh controller` until its queue first drains
 *   ("in sync": every owner reconciled, every object applied, every MeshReady written), against
 *   `kubectl apply --server-side` of the same rendered objects to a second server holding the same input,
 *   in the same run;
 * - event-to-applied latency under steady updates: InferenceServices changed at a steady rate (their
 *   visibility label toggled), from the change's response to the watch event of the VirtualService that
 *   follows it;
 * - the controller's peak memory (VmHWM of its process).
 *
 * Sizes: KFMESH_BENCH_PROFILES (500), KFMESH_BENCH_MODELS (2000); steady updates: KFMESH_BENCH_RATE per
 * second (10) for KFMESH_BENCH_SECONDS (30). KFMESH_BENCH_LOG=FILE keeps the controller's log;
 * KFMESH_BENCH_CPU_PROFILE=DIR writes its CPU profile there.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Watch } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { groupOf } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { readCluster } from '../../src/load/cluster.ts';
import { desiredState, MeshMode } from '../../src/render/desired-state.ts';
import { desiredByOwner } from '../../src/controller/desired.ts';
import { appliedKinds } from '../../src/controller/permissions.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { apiServerMissing, TestApiServer } from '../kube-apiserver.ts';
import { eventually, sleep, startController } from '../controller-process.ts';
import { printTable } from './harness.ts';

const profiles = Number(process.env['KFMESH_BENCH_PROFILES'] ?? 500);
const models = Number(process.env['KFMESH_BENCH_MODELS'] ?? 2000);
const rate = Number(process.env['KFMESH_BENCH_RATE'] ?? 10);
const seconds = Number(process.env['KFMESH_BENCH_SECONDS'] ?? 30);

/** The platform's configuration and system namespaces, `profiles` Profiles and `models` InferenceServices. */
function benchInput(): KubeObject[] {
  const platform = examplePlatform();
  const objects: KubeObject[] = platform.filter(
    (o) =>
      o.kind === 'ConfigMap' ||
      (o.kind === 'Namespace' &&
        ['istio-system', 'kubeflow', 'knative-serving'].includes(o.metadata.name ?? '')),
  );
  for (let p = 0; p < profiles; p++) {
    const name = `user-${p}`;
    objects.push(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'istio-injection': 'enabled' } } },
      {
        apiVersion: 'kubeflow.org/v1',
        kind: 'Profile',
        metadata: { name },
        spec: { owner: { kind: 'User', name: `${name}@example.com` } },
      },
    );
  }
  for (let m = 0; m < models; m++) {
    const namespace = `user-${m % Math.max(profiles, 1)}`;
    const name = `model-${m}`;
    objects.push({
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: { name, namespace, annotations: { 'serving.kserve.io/deploymentMode': 'Serverless' } },
      spec: { predictor: { model: { modelFormat: { name: 'sklearn' }, storageUri: 'gs://models/sklearn' } } },
      status: {
        components: {
          predictor: {
            address: { url: `http://${name}-predictor.${namespace}.svc.cluster.local` },
            url: `http://${name}-predictor.${namespace}.example.com`,
          },
        },
        conditions: [
          { type: 'PredictorReady', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
  }
  return objects;
}

/** Creates the objects a few hundred at a time (cluster-scoped first). */
async function load(server: TestApiServer, objects: readonly KubeObject[]): Promise<void> {
  const clusterScoped = new Set(['Namespace', 'Profile']);
  const ordered = [
    ...objects.filter((o) => clusterScoped.has(o.kind)),
    ...objects.filter((o) => !clusterScoped.has(o.kind)),
  ];
  for (let i = 0; i < ordered.length; i += 200) await server.create(ordered.slice(i, i + 200));
}

/** What the controller would apply for the server's objects (marked as kfmesh's), as `kfmesh render` computes it. */
async function rendered(server: TestApiServer): Promise<KubeObject[]> {
  const read = await readCluster(server.client);
  const result = desiredState(
    Snapshot.of(
      read.entries.map((e) => e.object),
      read.source,
    ),
    { mode: MeshMode.Sidecar },
  );
  return [...desiredByOwner(result).values()]
    .flat()
    .filter((o) => appliedKinds.includes(`${groupOf(o.apiVersion)}/${o.kind}`));
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main(): Promise<void> {
  const kubectlMissing = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).error;
  const missing = apiServerMissing() ?? (kubectlMissing ? 'needs kubectl on PATH' : undefined);
  if (missing) {
    console.log(`\ncontroller benchmark skipped: it ${missing}`);
    return;
  }
  const input = benchInput();
  console.log(
    `\ncontroller: ${profiles} Profiles, ${models} InferenceServices (${input.length} objects) on two API servers`,
  );
  const [forKubectl, forController] = await Promise.all([TestApiServer.start(), TestApiServer.start()]);
  try {
    await Promise.all([load(forKubectl, input), load(forController, input)]);

    // kubectl apply --server-side of the rendered objects.
    const objects = await rendered(forKubectl);
    const file = join(forKubectl.dir, 'rendered.yaml');
    writeFileSync(file, objects.map((o) => `---\n${stringify(o)}`).join(''));
    const kubectlStart = performance.now();
    const kubectl = spawnSync(
      'kubectl',
      [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=kfmesh',
        '-f',
        file,
        '--kubeconfig',
        forKubectl.kubeconfig,
      ],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const kubectlSeconds = (performance.now() - kubectlStart) / 1000;
    if (kubectl.status !== 0) throw new Error(`kubectl apply failed: ${kubectl.stderr.slice(-2000)}`);
    const kubectlApplied = kubectl.stdout.split('\n').filter((l) => l.endsWith('serverside-applied')).length;
    // Its server stops before the controller starts, so the two runs have the machine to themselves alike.
    await forKubectl.stop();

    // The controller's cold start.
    const controllerStart = performance.now();
    const profileDir = process.env['KFMESH_BENCH_CPU_PROFILE'];
    const controller = startController(
      forController.kubeconfig,
      ['--metrics-bind-address', '0', '--health-probe-bind-address', '0'],
      profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    );
    const inSync = await eventually(
      'the controller in sync',
      () =>
        /"msg":"in sync"/.test(controller.log())
          ? controller.log().match(/\{[^\n]*"msg":"in sync"[^\n]*\}/)?.[0]
          : undefined,
      { ms: 1_800_000, context: () => controller.log() },
    );
    const controllerSeconds = (performance.now() - controllerStart) / 1000;
    const sync = JSON.parse(inSync) as {
      reconciles: number;
      applies: number;
      renders: number;
      failing: number;
    };

    // Event-to-applied latency: toggle models' visibility; time until their VirtualService's event.
    const sent = new Map<string, number>();
    const sentState = new Map<string, boolean>();
    const latencies: number[] = [];
    const watch = new Watch(forController.client.config);
    const request = await watch.watch(
      '/apis/networking.istio.io/v1/virtualservices',
      { resourceVersion: '0' },
      (_type, object: KubeObject) => {
        const key = `${object.metadata.namespace}/${object.metadata.name}`;
        const at = sent.get(key);
        const local = ((object['spec'] as { hosts?: string[] }).hosts ?? []).every(
          (h) => !h.endsWith('.example.com'),
        );
        if (at !== undefined && local === (sentState.get(key) ?? false)) {
          latencies.push(performance.now() - at);
          sent.delete(key);
        }
      },
      () => undefined,
    );
    const updates = Math.max(1, Math.round(rate * seconds));
    for (let i = 0; i < updates; i++) {
      const m = (i * 7919) % models;
      const namespace = `user-${m % Math.max(profiles, 1)}`;
      const key = `${namespace}/model-${m}`;
      const local = !(sentState.get(key) ?? false);
      const began = performance.now();
      await forController.client.request(
        'PATCH',
        `/apis/serving.kserve.io/v1beta1/namespaces/${namespace}/inferenceservices/model-${m}`,
        {
          body: {
            metadata: { labels: { 'networking.knative.dev/visibility': local ? 'cluster-local' : null } },
          },
          contentType: 'application/merge-patch+json',
        },
      );
      sent.set(key, performance.now());
      sentState.set(key, local);
      await sleep(Math.max(0, 1000 / rate - (performance.now() - began)));
    }
    await eventually('every update applied', () => (sent.size === 0 ? true : undefined), { ms: 60_000 });
    (request as { abort?: () => void }).abort?.();
    const status = readFileSync(`/proc/${controller.process.pid}/status`, 'utf8');
    const peakMiB = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
    await controller.terminate();
    if (process.env['KFMESH_BENCH_LOG']) writeFileSync(process.env['KFMESH_BENCH_LOG'], controller.log());
    latencies.sort((a, b) => a - b);

    printTable(
      `controller cold start: ${profiles} Profiles + ${models} InferenceServices (${objects.length} objects to apply)`,
      ['', 'seconds', 'objects applied', 'ratio to kubectl'],
      [
        [
          'kubectl apply --server-side (one process, the rendered objects)',
          kubectlSeconds,
          kubectlApplied,
          1,
        ],
        [
          `kfmesh controller (start, list, render, apply, MeshReady; ${sync.renders} renders, ${sync.reconciles} reconciles)`,
          controllerSeconds,
          sync.applies,
          controllerSeconds / kubectlSeconds,
        ],
      ],
    );
    printTable(
      `controller under steady updates: ${updates} InferenceService changes at ${rate}/s`,
      ['event-to-applied p50 (ms)', 'p99 (ms)', 'max (ms)', 'controller peak RSS (MiB)'],
      [[percentile(latencies, 50), percentile(latencies, 99), latencies.at(-1) ?? NaN, peakMiB]],
    );
    if (sync.failing > 0) console.log(`note: ${sync.failing} owner(s) were failing at the first drain`);
  } finally {
    await Promise.all([forKubectl.stop(), forController.stop()]);
  }
}

await main();
