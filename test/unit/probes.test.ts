/**
 * The probes of what the controllers create next: each side's objects come from that side's controller
 * configuration, only for controllers whose configuration the inputs hold, and Knative's gateways from
 * `config-istio`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { knativeGatewaysFrom } from '../../src/kserve/knative.ts';
import { probeSet } from '../../src/verify/probes.ts';
import { examplePlatform } from '../../src/example/platform.ts';

const configMap = (namespace: string, name: string, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});

describe('probes', () => {
  test("Knative's gateways: the gateway and local-gateway keys of config-istio, else Knative's shipped ones", () => {
    const config = configMap('knative-serving', 'config-istio', {
      'gateway.kubeflow.kubeflow-gateway': 'istio-ingressgateway.istio-system.svc.cluster.local',
      'local-gateway.knative-serving.knative-local-gateway': 'local.istio-system.svc.cluster.local',
      _example: 'ignored',
    });
    assert.deepEqual(knativeGatewaysFrom(Snapshot.of([config])), {
      external: ['kubeflow/kubeflow-gateway'],
      local: ['knative-serving/knative-local-gateway'],
      localService: 'local.istio-system.svc.cluster.local',
    });
    assert.deepEqual(knativeGatewaysFrom(Snapshot.of([])).external, [
      'knative-serving/knative-ingress-gateway',
    ]);
  });

  test("each side's new Profile carries the principal of that side's profile controller configuration", () => {
    const principal = (p: string) =>
      configMap('kubeflow', 'profiles-config-x', { ISTIO_INGRESS_GATEWAY_PRINCIPAL: p });
    const set = probeSet(
      Snapshot.of([principal('cluster.local/ns/a/sa/old')]),
      Snapshot.of([principal('cluster.local/ns/b/sa/new')]),
      'cluster.local',
    );
    assert.deepEqual(set.controllers, ['profile controller']);
    const principals = set.objects.map((objects) =>
      objects
        .filter((o) => o.kind === 'AuthorizationPolicy')
        .map((o) => JSON.stringify(o.spec).match(/cluster\.local\/ns\/[ab]\/sa\/\w+/)?.[0]),
    );
    assert.deepEqual(principals, [['cluster.local/ns/a/sa/old'], ['cluster.local/ns/b/sa/new']]);
    // No notebook controller or KServe configuration: no notebook or model probes.
    assert.ok(set.probes.every((p) => !/notebook|model/.test(p.name)));
    assert.ok(
      set.objects.every(
        (objects) => !objects.some((o) => o.kind === 'Notebook' || o.kind === 'InferenceService'),
      ),
    );
  });

  test('on the example: a new notebook in each Profile probed, a model in each mode, the names free in both inputs', () => {
    const example = Snapshot.of(examplePlatform());
    const set = probeSet(example, example, 'cluster.local');
    assert.deepEqual(set.controllers, ['profile controller', 'notebook controller', 'KServe']);
    const [before, after] = set.objects;
    assert.deepEqual(before, after, 'the same configuration gives the same objects');
    const names = (kind: string) =>
      (before ?? []).filter((o) => o.kind === kind).map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    assert.deepEqual(names('Notebook'), [
      'kubeflow-user-example-com/kfmesh-probe-notebook',
      'kfmesh-probe/kfmesh-probe-notebook',
    ]);
    assert.deepEqual(names('InferenceService'), [
      'kubeflow-user-example-com/kfmesh-probe-default',
      'kubeflow-user-example-com/kfmesh-probe-raw',
    ]);
    // The existing Profile's namespace and owner policy are in the input: the probes do not write them again.
    assert.deepEqual(names('Namespace'), ['undefined/kfmesh-probe']);
    for (const probe of set.probes) assert.ok(probe.target.includes('/'), probe.name);
  });
});
