/**
 * A migration plan carried out on a real kube-apiserver with the real CRDs: `kfmesh migrate --plan` reads
 * the example platform from the cluster, then the test runs each step as plan.md says (its YAML file by
 * server-side apply, its deletions by file, its patches as JSON patches, its restarts as `kubectl rollout
 * restart` does), re-reads the cluster after each step and checks it against the start (no request denied
 * at the start is answered) and against the state the plan simulated (every request alike). Each step's
 * undo is carried out and checked the same way, then the step is done again.
 *
 * No kubelet or ReplicaSet controller runs here, so the test stands in for them: the platform's pods are
 * created as the plan's start state has them running, and after a step the pods the step replaced (a
 * restart, a patched template) are replaced as the plan's state says they come back. The objects the
 * steps write are what is under test; the pods follow the simulator's rule for what a restart gives.
 *
 * The real Kubeflow platform's plan is carried out too, on the objects its steps touch (the whole platform
 * would need its webhooks and controllers): every step, its undo and the step again must be accepted by
 * the API server and the real CRDs, and the objects must end as the plan's last state has them.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject, ObjectRef } from '../../src/model/object.ts';
import { namespaceLabels, refOf } from '../../src/model/object.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { snapshotFrom, snapshotFromPath } from '../../src/cli/io.ts';
import type { Snapshot } from '../../src/load/snapshot.ts';
import { planMigration } from '../../src/plan/order.ts';
import { asWritten, type MigrationPlan, type PlanStep } from '../../src/plan/plan.ts';
import type { Operation, PlanState } from '../../src/plan/state.ts';
import { fieldManager } from '../../src/plan/plan-files.ts';
import { OutputFormat, serialize } from '../../src/load/serialize.ts';
import { checkEquivalence } from '../../src/verify/equivalence.ts';
import { runKfmesh } from '../cli-process.ts';
import {
  apiServerTestOptions,
  realPlatformFile,
  realPlatformTestOptions,
  TestApiServer,
} from '../kube-apiserver.ts';

const objectsOf = (text: string): KubeObject[] => parseAllDocuments(text).map((d) => d.toJS() as KubeObject);
const quiet = { stdout: () => undefined, stderr: () => undefined };

describe('a migration plan carried out on a real API server', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let client: KubeClient;
  let plan: MigrationPlan;
  let start: Snapshot;
  const dir = join(mkdtempSync(join(tmpdir(), 'kfmesh-plan-apply-')), 'plan');

  const read = () => snapshotFrom([], quiet, { kubeconfig: server.kubeconfig });
  const pathOf = (ref: ObjectRef, apiVersion?: string) => objectPath(client, ref, apiVersion);

  /** The pods as the state has them running, owned by their workloads' objects in the cluster. */
  const syncPods = async (state: PlanState) => {
    const want = new Map<string, KubeObject>();
    for (const o of state.objects.values())
      if (o.kind === 'Pod') want.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    const have = await client.list((await client.resources()).get('/Pod') as never);
    const sig = (p: KubeObject) =>
      JSON.stringify([
        p.metadata.labels ?? {},
        p.metadata.annotations ?? {},
        (p['spec'] as { containers?: { name: string }[] }).containers?.map((c) => c.name),
      ]);
    for (const p of have) {
      const w = want.get(`${p.metadata.namespace}/${p.metadata.name}`);
      if (w && sig(w) === sig(p)) {
        want.delete(`${p.metadata.namespace}/${p.metadata.name}`);
        continue;
      }
      await client.request('DELETE', await pathOf(refOf({ ...p, apiVersion: 'v1', kind: 'Pod' })), {
        query: { gracePeriodSeconds: 0 },
      });
    }
    for (const pod of want.values()) {
      const owners = await Promise.all(
        (pod.metadata.ownerReferences ?? []).map(async (o) => {
          const owner = await client.request<KubeObject>(
            'GET',
            await pathOf({
              group: o.apiVersion.split('/')[0] ?? '',
              kind: o.kind,
              namespace: pod.metadata.namespace ?? '',
              name: o.name,
            }),
          );
          return { ...o, uid: owner.metadata.uid ?? '' };
        }),
      );
      // What the API server sets on a pod it created is left out of the one created again.
      const { status: _status, ...rest } = pod;
      const {
        resourceVersion: _v,
        uid: _u,
        creationTimestamp: _c,
        managedFields: _m,
        ...metadata
      } = pod.metadata;
      await client.request('POST', `/api/v1/namespaces/${pod.metadata.namespace}/pods`, {
        body: { ...rest, metadata: { ...metadata, ownerReferences: owners } },
      });
    }
  };

  /** Carries out operations as plan.md's commands do, the YAML files read for what is created and deleted. */
  const carryOut = async (step: PlanStep, operations: readonly Operation[], suffix: string) => {
    const file = (name: string) =>
      existsSync(join(dir, name)) ? objectsOf(readFileSync(join(dir, name), 'utf8')) : [];
    const created = file(`${step.id}${suffix}.yaml`);
    const deleted = file(`${step.id}${suffix}.delete.yaml`);
    assert.equal(created.length, operations.filter((o) => o.op === 'apply').length);
    assert.equal(deleted.length, operations.filter((o) => o.op === 'delete').length);
    let restarted = 0;
    for (const o of operations) {
      let object: KubeObject | undefined;
      if (o.op === 'apply') {
        object = created.find((c) => JSON.stringify(refOf(c)) === JSON.stringify(refOf(o.object)));
        assert.ok(object, `${step.id}: ${o.object.kind} ${o.object.metadata.name} is in its YAML file`);
      } else if (o.op === 'delete') {
        object = deleted.find((c) => JSON.stringify(refOf(c)) === JSON.stringify(o.ref));
        assert.ok(object, `${step.id}: ${o.ref.kind} ${o.ref.name} is in its deletion file`);
      }
      await send(client, o, `${step.id}${suffix}-${restarted++}`, object);
    }
  };

  /** The cluster answers every request as the state does, and opens nothing the start refused. */
  const matches = async (state: PlanState, label: string) => {
    const cluster = await read();
    const same = checkEquivalence(state.snapshot(), cluster);
    assert.equal(
      same.errors + same.warnings + same.notes,
      0,
      `${label}: the cluster differs from the plan's state: ${JSON.stringify(same.groups.slice(0, 2))}`,
    );
    const fromStart = checkEquivalence(start, cluster);
    assert.equal(fromStart.errors, 0, `${label}: a request denied at the start is answered`);
  };

  before(async () => {
    server = await TestApiServer.start({ notebooks: true });
    client = server.client;
    const example = objectsOf(runKfmesh(['example']).stdout);
    await server.create(example);
    // The pods as they run before the migration (the stand-in's first act).
    const first = planMigration(await read(), { order: [] });
    await syncPods(first.states[0] as PlanState);
    start = await read();
    const run = runKfmesh(['migrate', '--to', 'ambient', '--kubeconfig', server.kubeconfig, '--plan', dir]);
    assert.equal(run.code, 0, run.stderr);
    plan = planMigration(start);
  });
  after(async () => {
    await server?.stop();
  });

  test('the plan kfmesh wrote from the cluster is the one planned from the same objects in this process', () => {
    const written = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8')) as {
      steps: { id: string; operations: unknown[] }[];
    };
    assert.deepEqual(
      written.steps.map((s) => s.id),
      plan.steps.map((s) => s.id),
    );
    assert.deepEqual(
      written.steps.map((s) => s.operations),
      JSON.parse(JSON.stringify(plan.steps.map((s) => s.operations))),
    );
    assert.ok(plan.steps.length >= 8);
  });

  test('each step, carried out through the API server, gives the state the plan simulated; so does its undo', async () => {
    await matches(plan.states[0] as PlanState, 'the start');
    for (const step of plan.steps) {
      const now = plan.states[step.number] as PlanState;
      await carryOut(step, step.operations, '');
      await syncPods(now);
      await matches(now, `after ${step.id}`);
      if (step.undo.length === 0) continue;
      // The undo gives back a state that answers alike (checkPlan checks that); its pods are the ones the
      // undo's restarts give, new pods where the step restarted some.
      const undone = now.apply(step.undo);
      await carryOut(step, step.undo, '.undo');
      await syncPods(undone);
      await matches(undone, `after undoing ${step.id}`);
      await carryOut(step, step.operations, '');
      await syncPods(now);
      await matches(now, `after ${step.id} again`);
    }
    // At the end `kfmesh verify --equivalence`, with the cluster before and the plan's last state after,
    // finds nothing changed. (Not the migration's output as it stands: with the cluster's running pods in
    // its input it keeps them, sidecars without HBONE included, where the plan restarted them.)
    const migrated = join(dir, '..', 'last-state.yaml');
    writeFileSync(
      migrated,
      serialize([...(plan.states.at(-1) as PlanState).objects.values()], OutputFormat.Yaml),
    );
    const verify = runKfmesh(['verify', '--equivalence', '--kubeconfig', server.kubeconfig, migrated]);
    assert.equal(verify.code, 0, verify.stdout);
    assert.match(
      verify.stdout,
      /unchanged; 0 errors \(denied before, answered after\), 0 warnings, 0 notes\./,
    );
  });
});

describe(
  "the real Kubeflow platform's plan, carried out on a real API server",
  realPlatformTestOptions(),
  () => {
    let server: TestApiServer;
    let client: KubeClient;
    let plan: MigrationPlan;
    const pathOf = (ref: ObjectRef, apiVersion?: string) => objectPath(client, ref, apiVersion);
    const run = async (label: string, operations: readonly Operation[]) => {
      for (const o of operations) {
        const what = `${label}: ${o.op} ${o.op === 'apply' ? refText(refOf(o.object)) : o.op === 'restart' ? o.workload.name : refText(o.ref)}`;
        try {
          await send(client, o, label);
        } catch (error) {
          assert.fail(`${what}: ${(error as Error).message}`);
        }
      }
    };

    before(async () => {
      server = await TestApiServer.start({ notebooks: true });
      client = server.client;
      plan = planMigration(await snapshotFromPath(realPlatformFile, quiet));
      // The objects the steps change or delete, as the platform has them, in their namespaces.
      const start = plan.states[0] as PlanState;
      const touched = new Map<string, KubeObject>();
      for (const step of plan.steps)
        for (const o of [...step.operations, ...step.undo]) {
          const ref =
            o.op === 'patch' || o.op === 'delete'
              ? o.ref
              : o.op === 'restart'
                ? {
                    group: 'apps',
                    kind: o.workload.kind,
                    namespace: o.workload.namespace,
                    name: o.workload.name,
                  }
                : undefined;
          const object = ref && start.get(ref);
          if (object) touched.set(refText(ref), withoutGrpcProbes(asWritten(object)));
        }
      const namespaces = [...start.objects.values()].filter(
        (o) => o.kind === 'Namespace' && o.apiVersion === 'v1',
      );
      await server.create([
        ...namespaces
          .filter((n) => !['default', 'kube-system', 'kube-public'].includes(n.metadata.name ?? ''))
          .map(asWritten),
        ...[...touched.values()].filter((o) => o.kind !== 'Namespace'),
      ]);
    });
    after(async () => {
      await server?.stop();
    });

    test('every step, its undo and the step again are accepted by the API server and the real CRDs; the objects end as planned', async () => {
      assert.ok(plan.steps.length >= 10);
      for (const step of plan.steps) {
        await run(step.id, step.operations);
        await run(`${step.id} undo`, step.undo);
        await run(`${step.id} again`, step.operations);
      }
      const end = plan.states.at(-1) as PlanState;
      let compared = 0;
      for (const step of plan.steps)
        for (const o of step.operations) {
          if (o.op !== 'patch' && o.op !== 'apply') continue;
          const ref = o.op === 'apply' ? refOf(o.object) : o.ref;
          const want = end.get(ref);
          if (!want) continue;
          const got = await client.request<KubeObject>('GET', await pathOf(ref));
          const labels = want.metadata.labels ?? {};
          // The API server labels every namespace with its name, as the model has it.
          const expected = ref.kind === 'Namespace' ? namespaceLabels(labels, ref.name) : labels;
          assert.deepEqual(got.metadata.labels ?? {}, expected, refText(ref));
          if (ref.kind === 'AuthorizationPolicy') assert.deepEqual(got['spec'], want['spec'], refText(ref));
          compared++;
        }
      // 47 since the front door stays on the Istio gateway (no converted routes and their policies).
      assert.ok(compared > 40, `${compared} objects compared`);
    });
  },
);

/**
 * Sends one operation as plan.md's command does: a creation by server-side apply (of `object`, the one read
 * from the step's file, when given), a deletion, a JSON patch, or a restart as `kubectl rollout restart`
 * makes it (a new annotation on the pod template).
 */
async function send(
  client: KubeClient,
  o: Operation,
  restartedAt: string,
  object?: KubeObject,
): Promise<void> {
  if (o.op === 'apply') {
    const x = object ?? o.object;
    await client.request('PATCH', await objectPath(client, refOf(x), x.apiVersion), {
      body: x,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager, force: true },
    });
  } else if (o.op === 'delete')
    await client.request(
      'DELETE',
      await objectPath(client, object ? refOf(object) : o.ref, object?.apiVersion),
    );
  else if (o.op === 'patch')
    await client.request('PATCH', await objectPath(client, o.ref), {
      body: o.patch,
      contentType: 'application/json-patch+json',
    });
  else {
    const { kind, namespace, name } = o.workload;
    const annotations = { 'kubectl.kubernetes.io/restartedAt': restartedAt };
    await client.request('PATCH', await objectPath(client, { group: 'apps', kind, namespace, name }), {
      body: { spec: { template: { metadata: { annotations } } } },
      contentType: 'application/strategic-merge-patch+json',
    });
  }
}

/** An object's path, at the version it is written in when given (as kubectl sends it), else the server's. */
async function objectPath(client: KubeClient, ref: ObjectRef, apiVersion?: string): Promise<string> {
  const resource = (await client.resources()).get(`${ref.group}/${ref.kind}`);
  if (!resource) throw new Error(`the server does not serve ${ref.group}/${ref.kind}`);
  const version = apiVersion?.split('/').at(-1) ?? resource.version;
  return `${KubeClient.collectionPath({ ...resource, version }, ref.namespace || undefined)}/${ref.name}`;
}

const refText = (r: ObjectRef) => `${r.kind} ${r.namespace}/${r.name}`;

/**
 * A workload without its containers' gRPC probes, which the API server built here predates (it drops the
 * field, then finds the probe has no handler). No step reads or writes probes.
 */
function withoutGrpcProbes(object: KubeObject): KubeObject {
  const spec = object['spec'] as
    { template?: { spec?: { containers?: Record<string, unknown>[] } } } | undefined;
  const containers = spec?.template?.spec?.containers;
  if (!containers) return object;
  const probes = ['livenessProbe', 'readinessProbe', 'startupProbe'];
  const clean = containers.map((c) =>
    Object.fromEntries(
      Object.entries(c).filter(
        ([k, v]) => !(probes.includes(k) && (v as { grpc?: unknown }).grpc !== undefined),
      ),
    ),
  );
  return {
    ...object,
    spec: { ...spec, template: { ...spec.template, spec: { ...spec.template?.spec, containers: clean } } },
  };
}
