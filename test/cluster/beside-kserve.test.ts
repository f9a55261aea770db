/**
 * `kfmesh controller` beside KServe, against a real kube-apiserver: between kfmesh's reconciles the test
 * writes what KServe's ingress reconciler writes for a Serverless InferenceService, with its field
 * manager and its requests: the top-level VirtualService (labels the InferenceService's, compared with
 * the spec and put back whole, labels and annotations included, whenever they differ) and the
 * ExternalName Service (put back when a field it sets differs, labels merged).
 *
 * Two KServe versions side by side: one that binds the VirtualService to `mesh` (0.14 and later, the form
 * kfmesh renders) and one that does not (0.13). What must hold for both: no write loop over the run. For
 * the first, the VirtualService keeps `mesh` and MeshReady is True; for the second kfmesh leaves KServe's
 * VirtualService as KServe writes it and MeshReady is False, naming the object and what to change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh, writeText } from '../cli-process.ts';
import {
  eventually,
  noServerArgs,
  sleep,
  startController,
  type RunningController,
} from '../controller-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';
import { ControllerRuntimeManager, StandInClient } from '../stand-in.ts';

/** KServe's field manager. */
const manager = ControllerRuntimeManager;
const current = { namespace: 'kubeflow-user-example-com', name: 'sklearn-iris' };
const older = { namespace: 'ml-team', name: 'fraud-scorer' };
const vsPath = (m: typeof current) =>
  `/apis/networking.istio.io/v1/namespaces/${m.namespace}/virtualservices/${m.name}`;
const servicePath = (m: typeof current) => `/api/v1/namespaces/${m.namespace}/services/${m.name}`;
const isvcPath = (m: typeof current) =>
  `/apis/serving.kserve.io/v1beta1/namespaces/${m.namespace}/inferenceservices/${m.name}`;

type Spec = Record<string, unknown>;

/** A VirtualService spec without `mesh`, as KServe before 0.14 writes it. */
function withoutMesh(spec: Spec): Spec {
  const drop = (gateways: unknown) => (gateways as string[]).filter((g) => g !== 'mesh');
  const http = (spec['http'] as { match?: { gateways?: string[] }[] }[]).map((route) => ({
    ...route,
    ...(route.match
      ? { match: route.match.map((m) => (m.gateways ? { ...m, gateways: drop(m.gateways) } : m)) }
      : {}),
  }));
  return { ...spec, gateways: drop(spec['gateways']), http };
}

/** KServe's ingress reconciler for one InferenceService (its VirtualService and ExternalName Service). */
class KServeStandIn {
  readonly #client: StandInClient;
  readonly #model: typeof current;
  readonly #vs: KubeObject;
  readonly #service: KubeObject;

  constructor(
    server: TestApiServer,
    model: typeof current,
    isvc: KubeObject,
    rendered: KubeObject[],
    mesh: boolean,
  ) {
    this.#client = new StandInClient(server, manager);
    this.#model = model;
    const { name = '', uid = '' } = isvc.metadata;
    const ownerReferences = [
      { apiVersion: isvc.apiVersion, kind: isvc.kind, name, uid, controller: true, blockOwnerDeletion: true },
    ];
    const find = (kind: string) => {
      const found = rendered.find(
        (o) => o.kind === kind && o.metadata.namespace === model.namespace && o.metadata.name === model.name,
      );
      assert.ok(found, `kfmesh renders ${kind} ${model.namespace}/${model.name}`);
      return found;
    };
    const vs = find('VirtualService');
    this.#vs = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {
        name,
        namespace: model.namespace,
        labels: isvc.metadata.labels ?? {},
        annotations: vs.metadata.annotations ?? {},
        ownerReferences,
      },
      spec: mesh ? (vs['spec'] as Spec) : withoutMesh(vs['spec'] as Spec),
    };
    const service = find('Service');
    this.#service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: model.namespace, ownerReferences },
      spec: service['spec'],
    };
  }

  get writes(): number {
    return this.#client.writes;
  }

  async reconcile(): Promise<void> {
    await this.#virtualService();
    await this.#externalService();
  }

  async #virtualService(): Promise<void> {
    const path = vsPath(this.#model);
    const found = await this.#client.get(path);
    if (!found) {
      await this.#client.write('POST', path.slice(0, path.lastIndexOf('/')), this.#vs, true);
      return;
    }
    // routeSemanticEquals: the spec, and the labels and annotations deep-equal; else Spec, Labels and
    // Annotations are put back whole.
    const same =
      isDeepStrictEqual(found['spec'], this.#vs['spec']) &&
      isDeepStrictEqual(found.metadata.labels ?? {}, this.#vs.metadata.labels ?? {}) &&
      isDeepStrictEqual(found.metadata.annotations ?? {}, this.#vs.metadata.annotations ?? {});
    if (same) return;
    await this.#client.write(
      'PUT',
      path,
      {
        ...found,
        metadata: {
          ...found.metadata,
          labels: this.#vs.metadata.labels,
          annotations: this.#vs.metadata.annotations,
        },
        spec: this.#vs['spec'],
      },
      true,
    );
  }

  async #externalService(): Promise<void> {
    const path = servicePath(this.#model);
    const found = await this.#client.get(path);
    if (!found) {
      await this.#client.write('POST', path.slice(0, path.lastIndexOf('/')), this.#service, true);
      return;
    }
    // DeepDerivative: only the fields KServe sets are compared; the spec is put back, labels merged.
    const spec = this.#service['spec'] as Spec;
    const live = (found['spec'] ?? {}) as Spec;
    if (Object.entries(spec).every(([k, v]) => isDeepStrictEqual(live[k], v))) return;
    await this.#client.write('PUT', path, { ...found, spec: { ...live, ...spec } }, true);
  }
}

const appliedCount = (log: string) => log.split('\n').filter((l) => l.includes('"msg":"applied"')).length;

for (const kfmeshFirst of [true, false])
  describe(
    `kfmesh controller beside KServe, ${kfmeshFirst ? 'kfmesh' : 'KServe'} writing first`,
    apiServerTestOptions(),
    () => {
      let server: TestApiServer;
      let controller: RunningController;
      const standIns: KServeStandIn[] = [];
      const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);

      before(async () => {
        server = await TestApiServer.start();
        const models = example.filter(
          (o) =>
            o.kind === 'InferenceService' &&
            [current, older].some((m) => m.namespace === o.metadata.namespace && m.name === o.metadata.name),
        );
        await server.create([
          ...example.filter((o) => o.kind === 'Namespace' || o.kind === 'ConfigMap'),
          ...models,
        ]);
        // What kfmesh renders for these models is what KServe 0.14 writes (docs/semantics.md, KServe).
        const input = writeText(
          [...example.filter((o) => o.kind === 'Namespace' || o.kind === 'ConfigMap'), ...models]
            .map((o) => JSON.stringify(o))
            .join('\n---\n'),
          'kserve-models.yaml',
        );
        const rendered = parseAllDocuments(runKfmesh(['render', input]).stdout).map(
          (d) => d.toJS() as KubeObject,
        );
        for (const [model, mesh] of [
          [current, true],
          [older, false],
        ] as const) {
          const isvc = await server.client.request<KubeObject>('GET', isvcPath(model));
          standIns.push(new KServeStandIn(server, model, isvc, rendered, mesh));
        }
        controller = startController(server.kubeconfig, noServerArgs);
        if (kfmeshFirst) {
          // kfmesh's objects for both models, marked as its own, before KServe's reconciler runs.
          const client = new StandInClient(server, manager);
          for (const model of [current, older]) await client.kfmeshWrote(vsPath(model));
        }
      });

      after(async () => {
        if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
        await server?.stop();
      });

      test('no write loop over 40 s of KServe reconciling', async (t) => {
        const started = Date.now();
        let atHalf: number | undefined;
        let kserveAtHalf = 0;
        const kserveWrites = () => standIns.reduce((n, s) => n + s.writes, 0);
        while (Date.now() - started < 40_000) {
          for (const s of standIns) await s.reconcile();
          if (atHalf === undefined && Date.now() - started >= 20_000) {
            atHalf = appliedCount(controller.log());
            kserveAtHalf = kserveWrites();
          }
          await sleep(500);
        }
        const applied = appliedCount(controller.log());
        t.diagnostic(
          `kfmesh applied ${applied} objects (${atHalf ?? 0} by 20 s); KServe wrote ${kserveWrites()} times`,
        );
        // Each of kfmesh's objects written a few times at most while the two settle, then nothing.
        assert.ok(applied <= 8, `kfmesh applied ${applied} objects:\n${controller.log()}`);
        assert.equal(applied, atHalf, 'kfmesh applied nothing in the second half');
        assert.ok(kserveWrites() <= 8, `the stand-in wrote ${kserveWrites()} times`);
        assert.equal(kserveWrites(), kserveAtHalf, 'KServe wrote nothing in the second half');
      });

      test('KServe 0.14 and later: the VirtualService keeps mesh; MeshReady True', async () => {
        const vs = await server.client.request<KubeObject>('GET', vsPath(current));
        assert.ok(((vs['spec'] as Spec)['gateways'] as string[]).includes('mesh'));
        const isvc = await server.client.request<{
          status?: { conditions?: { type: string; status: string }[] };
        }>('GET', isvcPath(current));
        const condition = isvc.status?.conditions?.find((c) => c.type === 'MeshReady');
        assert.equal(condition?.status, 'True', JSON.stringify(isvc.status?.conditions));
      });

      test('KServe 0.13: its VirtualService left as it writes it; MeshReady False says what to change', async () => {
        const vs = await server.client.request<KubeObject>('GET', vsPath(older));
        assert.ok(!((vs['spec'] as Spec)['gateways'] as string[]).includes('mesh'));
        const condition = await eventually('MeshReady False', async () => {
          const isvc = await server.client.request<{
            status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
          }>('GET', isvcPath(older));
          return isvc.status?.conditions?.find((c) => c.type === 'MeshReady' && c.status === 'False');
        });
        assert.equal(condition.reason, 'NotManaged');
        assert.match(condition.message, /VirtualService ml-team\/fraud-scorer/);
        assert.match(condition.message, /InferenceService ml-team\/fraud-scorer/);
        assert.match(condition.message, /KServe 0\.14/);
      });
    },
  );
