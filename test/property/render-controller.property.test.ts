/**
 * The controller renders what `kfmesh render` prints. For generated platforms (Profiles, Notebooks and
 * InferenceServices in a few namespaces, mode labels, and the settings ConfigMaps under the names
 * kustomize gives them, beside look-alikes nobody reads), the desired objects the controller's own cache
 * and renders give, namespace by namespace, are those of `desiredState` over the whole input; and a change
 * to a settings ConfigMap makes every namespace's render stale, while a change to one nobody reads does not.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState, renderConfigInputs, type MeshMode } from '../../src/render/desired-state.ts';
import { cacheOf } from '../controller-fixtures.ts';
import { Renders } from '../../src/controller/renders.ts';
import { desiredByOwner } from '../../src/controller/desired.ts';
import { isConfigMapOfAny } from '../../src/model/inputs.ts';
import { dataOf } from '../../src/model/specs.ts';
import { examplePlatform } from '../../src/example/platform.ts';

const namespaces = ['team-a', 'team-b', 'kubeflow-user-example-com'];
const suffix = fc.constantFrom('', '-abc', '-fhm9f7tdt5');

/** The settings ConfigMaps, each maybe absent, under names with and without a kustomize hash. */
const settingsArb = fc.record({
  notebooks: fc.option(
    fc.record({
      suffix,
      useIstio: fc.constantFrom('true', 'false', undefined),
      gateway: fc.constantFrom('kubeflow/other-gateway', 'kubeflow/kubeflow-gateway', undefined),
    }),
    { nil: undefined },
  ),
  profiles: fc.option(
    fc.record({
      suffix,
      header: fc.constantFrom('kubeflow-userid', 'x-user'),
      principal: fc.constantFrom(
        'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account',
        'cluster.local/ns/istio-system/sa/other',
      ),
    }),
    { nil: undefined },
  ),
  labels: fc.option(fc.record({ suffix, value: fc.constantFrom('', 'x') }), { nil: undefined }),
  kfmesh: fc.option(fc.constantFrom('waypoint', 'wp'), { nil: undefined }),
  hbone: fc.boolean(),
  lookAlikes: fc.subarray(['notebook-config', 'my-profiles-config', 'kfmesh-extra', 'istio-ca-root-cert']),
});

const platformArb = fc.record({
  settings: settingsArb,
  profiles: fc.subarray(namespaces),
  modes: fc.array(fc.constantFrom<MeshMode | undefined>('sidecar', 'ambient', undefined), {
    minLength: namespaces.length,
    maxLength: namespaces.length,
  }),
  notebooks: fc.array(
    fc.record({ name: fc.constantFrom('nb1', 'nb2'), ns: fc.constantFrom(...namespaces) }),
    {
      maxLength: 3,
    },
  ),
  models: fc.array(
    fc.record({
      name: fc.constantFrom('m1', 'm2'),
      ns: fc.constantFrom(...namespaces),
      mode: fc.constantFrom('Serverless', 'RawDeployment'),
    }),
    { maxLength: 3 },
  ),
  defaultMode: fc.constantFrom<MeshMode>('sidecar', 'ambient'),
});
type Platform = typeof platformArb extends fc.Arbitrary<infer T> ? T : never;

function configMap(name: string, namespace: string, data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

function settingsObjects(s: Platform['settings']): KubeObject[] {
  const out: KubeObject[] = [];
  if (s.notebooks) {
    const data: Record<string, string> = {};
    if (s.notebooks.useIstio) data['USE_ISTIO'] = s.notebooks.useIstio;
    if (s.notebooks.gateway) data['ISTIO_GATEWAY'] = s.notebooks.gateway;
    out.push(configMap(`notebook-controller-config${s.notebooks.suffix}`, 'kubeflow', data));
  }
  if (s.profiles)
    out.push(
      configMap(`profiles-config${s.profiles.suffix}`, 'kubeflow', {
        USERID_HEADER: s.profiles.header,
        ISTIO_INGRESS_GATEWAY_PRINCIPAL: s.profiles.principal,
      }),
    );
  if (s.labels)
    out.push(
      configMap(`namespace-labels-data${s.labels.suffix}`, 'kubeflow', {
        'namespace-labels.yaml': `team.example.com/billing: "${s.labels.value}"\n`,
      }),
    );
  if (s.kfmesh) out.push(configMap('kfmesh', 'kubeflow', { waypointName: s.kfmesh }));
  if (s.hbone)
    out.push(
      configMap('istio', 'istio-system', {
        mesh: 'defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\n',
      }),
    );
  for (const name of s.lookAlikes)
    out.push(configMap(name, 'kubeflow', { ISTIO_GATEWAY: 'x/y', USE_ISTIO: 'false' }));
  return out;
}

function platformObjects(p: Platform): KubeObject[] {
  // The example's own settings ConfigMaps give way to the generated ones.
  const example = examplePlatform().filter(
    (o) =>
      !(
        o.kind === 'ConfigMap' &&
        isConfigMapOfAny(renderConfigInputs, o) &&
        o.metadata.name !== 'inferenceservice-config'
      ),
  );
  const objects: KubeObject[] = [...example, ...settingsObjects(p.settings)];
  namespaces.forEach((ns, i) => {
    const mode = p.modes[i];
    objects.push({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns,
        labels: { 'istio-injection': 'enabled', ...(mode ? { 'kfmesh.io/mode': mode } : {}) },
      },
    });
  });
  for (const ns of p.profiles)
    objects.push({
      apiVersion: 'kubeflow.org/v1',
      kind: 'Profile',
      metadata: { name: ns },
      spec: { owner: { kind: 'User', name: `${ns}@example.com` } },
    });
  for (const nb of p.notebooks)
    objects.push({
      apiVersion: 'kubeflow.org/v1',
      kind: 'Notebook',
      metadata: { name: nb.name, namespace: nb.ns },
      spec: { template: { spec: { containers: [{ name: nb.name }] } } },
    });
  for (const m of p.models)
    objects.push({
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: {
        name: m.name,
        namespace: m.ns,
        annotations: { 'serving.kserve.io/deploymentMode': m.mode },
      },
      spec: { predictor: { model: { modelFormat: { name: 'sklearn' } } } },
    });
  // One definition per object, as a cluster has (the last given wins, as for `kfmesh render`).
  return Snapshot.of(objects).all().slice();
}

const canonical = (byOwner: Map<string, KubeObject[]>) =>
  [...byOwner].flatMap(([owner, objects]) => objects.map((o) => `${owner} ${JSON.stringify(o)}`)).sort();

describe('the controller renders what kfmesh render prints', () => {
  test('per namespace, from its own cache, on generated platforms', async () => {
    const sizes: number[] = [];
    await fc.assert(
      fc.asyncProperty(platformArb, async (p) => {
        const objects = platformObjects(p);
        const whole = desiredByOwner(desiredState(Snapshot.of(objects), { mode: p.defaultMode }));
        const cache = cacheOf(objects);
        const renders = new Renders(cache, { mode: p.defaultMode, newOwner: () => undefined });
        const parts = new Map<string, KubeObject[]>();
        const all = new Set(
          objects.flatMap((o) => [
            o.metadata.namespace ?? '',
            ...(o.kind === 'Namespace' || o.kind === 'Profile' ? [o.metadata.name ?? ''] : []),
          ]),
        );
        for (const ns of [...all].filter(Boolean).sort()) {
          const rendered = await renders.desired(ns);
          for (const [owner, list] of rendered.byOwner)
            parts.set(owner, [...(parts.get(owner) ?? []), ...list]);
        }
        assert.deepEqual(canonical(parts), canonical(whole));
        sizes.push(canonical(whole).length);
      }),
      { numRuns: 60, seed: 20261207 },
    );
    // The platforms render something, and not always the same amount.
    assert.ok(Math.min(...sizes) > 0 && Math.max(...sizes) > Math.min(...sizes), String(sizes));
  });

  test('a change to a ConfigMap a reader declares re-renders every namespace; a look-alike re-renders none', async () => {
    await fc.assert(
      fc.asyncProperty(platformArb, async (p) => {
        const objects = platformObjects(p);
        const cache = cacheOf(objects);
        const renders = new Renders(cache, { mode: p.defaultMode, newOwner: () => undefined });
        // What the readers read, said here apart from their declarations: the generated settings, KServe's
        // configuration and domains, and the mesh config.
        const read = new Set([
          ...settingsObjects(p.settings)
            .map((o) => o.metadata.name)
            .filter((name) => !p.settings.lookAlikes.includes(name ?? '')),
          'inferenceservice-config',
          'config-domain',
          'istio',
        ]);
        for (const cm of objects.filter((o) => o.kind === 'ConfigMap')) {
          const generations = await Promise.all(
            namespaces.map(async (ns) => (await renders.desired(ns)).generation),
          );
          const touched = { ...cm, data: { ...dataOf(cm), touched: 'yes' } } as KubeObject;
          const changed = cache.set(touched, false);
          assert.equal(changed, read.has(cm.metadata.name), `${cm.metadata.namespace}/${cm.metadata.name}`);
          for (const [i, ns] of namespaces.entries())
            assert.equal(cache.fresh(ns, generations[i] ?? 0), !changed, `${ns} after ${cm.metadata.name}`);
        }
      }),
      { numRuns: 20, seed: 20261207 },
    );
  });
});

describe('the readers of the settings and the controller name the same ConfigMaps', () => {
  const example = Snapshot.of(examplePlatform());
  const withNotebookConfig = (data: Record<string, string>) =>
    [
      ...example
        .all()
        .filter(
          (o) =>
            !(o.kind === 'ConfigMap' && (o.metadata.name ?? '').startsWith('notebook-controller-config')),
        ),
      configMap('notebook-controller-config-abc', 'kubeflow', data),
      {
        apiVersion: 'kubeflow.org/v1',
        kind: 'Notebook',
        metadata: { name: 'nb', namespace: 'kubeflow-user-example-com' },
        spec: {},
      },
    ] as KubeObject[];
  const notebookRoutes = async (objects: KubeObject[]) => {
    const renders = new Renders(cacheOf(objects), { mode: 'sidecar', newOwner: () => undefined });
    const rendered = await renders.desired('kubeflow-user-example-com');
    const fromController = [...rendered.byOwner.values()]
      .flat()
      .filter((o) => o.metadata.name === 'notebook-kubeflow-user-example-com-nb');
    const fromRender = desiredState(Snapshot.of(objects), { mode: 'sidecar' }).objects.filter(
      (o) => o.metadata.name === 'notebook-kubeflow-user-example-com-nb',
    );
    return { fromController, fromRender };
  };

  test("a hashed notebook-controller-config's ISTIO_GATEWAY binds the notebook's route in both", async () => {
    const { fromController, fromRender } = await notebookRoutes(
      withNotebookConfig({ USE_ISTIO: 'true', ISTIO_GATEWAY: 'kubeflow/other-gateway' }),
    );
    const gateways = (o: KubeObject[]) =>
      o.map((v) => (v as { spec?: { gateways?: string[] } }).spec?.gateways);
    assert.deepEqual(gateways(fromRender), [['kubeflow/other-gateway']]);
    assert.deepEqual(gateways(fromController), [['kubeflow/other-gateway']]);
  });

  test('USE_ISTIO other than "true": the notebook controller writes no route, and neither does kfmesh', async () => {
    for (const mode of ['false', ''] as const) {
      const { fromController, fromRender } = await notebookRoutes(withNotebookConfig({ USE_ISTIO: mode }));
      assert.deepEqual(fromRender, []);
      assert.deepEqual(fromController, []);
    }
  });
});
