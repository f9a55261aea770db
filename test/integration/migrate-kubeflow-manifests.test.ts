/**
 * Migration of a configuration kfmesh did not write: Kubeflow's manifests (common/istio, the components'
 * Istio objects, a Profile namespace) as `kustomize build` renders them, in test/data/kubeflow-manifests.
 * The result follows KEP-2676: a waypoint only where L7 is needed, L4 policies left to ztunnel, the edge
 * policies on the Gateway API gateway, and no request opened.
 */
import { GroupKind } from '../../src/model/vocabulary.ts';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { loadPaths } from '../../src/load/files.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient, type MigrationResult } from '../../src/ambient/migrate.ts';
import { checkEquivalence } from '../../src/verify/equivalence.ts';
import { projectRoot } from '../conformance/cases.ts';
import { isSchemaChecked, schemaFailures } from '../crd-validation.ts';

const ingressPrincipal = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';
const newIngressPrincipal = 'cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio';

let input: Snapshot;
let result: MigrationResult;

before(async () => {
  input = new Snapshot(await loadPaths([join(projectRoot, 'test/data/kubeflow-manifests')]));
  result = migrateToAmbient(input);
});

const get = (kind: string, namespace: string, name: string, group = ''): KubeObject | undefined =>
  result.objects.find(
    (o) =>
      o.kind === kind &&
      (o.metadata.namespace ?? '') === namespace &&
      o.metadata.name === name &&
      o.apiVersion.startsWith(group),
  );
const spec = (o: KubeObject | undefined) => (o?.['spec'] ?? {}) as Record<string, unknown>;

describe("migrate on Kubeflow's manifests", () => {
  test('the output passes the real CRD schemas', () => {
    const checked = result.objects.filter(isSchemaChecked);
    assert.ok(checked.length > 50);
    assert.deepEqual(schemaFailures(checked), []);
  });

  test('waypoints only where L7 is needed: the pipelines API and UI, and the Profile namespace', () => {
    const waypoints = result.objects
      .filter((o) => o.kind === 'Gateway' && spec(o)['gatewayClassName'] === 'istio-waypoint')
      .map((o) => o.metadata.namespace);
    assert.deepEqual(waypoints, ['kubeflow', 'kubeflow-user-example-com']);
    const enrolled = result.objects
      .filter((o) => o.kind === 'Service' && o.metadata.labels?.['istio.io/use-waypoint'] !== undefined)
      .map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    assert.deepEqual(enrolled, ['kubeflow/ml-pipeline', 'kubeflow/ml-pipeline-ui']);
    const profile = get('Namespace', '', 'kubeflow-user-example-com');
    assert.equal(profile?.metadata.labels?.['istio.io/use-waypoint'], 'waypoint');
    assert.equal(profile?.metadata.labels?.['istio.io/dataplane-mode'], 'ambient');
    assert.equal(profile?.metadata.labels?.['istio-injection'], undefined);
    // The profile controller's other labels stay.
    assert.equal(profile?.metadata.labels?.['pipelines.kubeflow.org/enabled'], 'true');
  });

  test('principal-only policies stay at ztunnel, renamed to the new ingress identity', () => {
    const visualization = get('AuthorizationPolicy', 'kubeflow', 'ml-pipeline-visualizationserver');
    assert.deepEqual(
      visualization,
      input.get(GroupKind.AuthorizationPolicy, 'kubeflow', 'ml-pipeline-visualizationserver'),
    );
    for (const name of ['central-dashboard', 'jupyter-web-app', 'katib-ui', 'model-registry-ui']) {
      const text = JSON.stringify(get('AuthorizationPolicy', 'kubeflow', name));
      assert.ok(text.includes(newIngressPrincipal), name);
      assert.ok(!text.includes(ingressPrincipal), name);
      assert.ok(spec(get('AuthorizationPolicy', 'kubeflow', name))['selector'], name);
    }
  });

  test('the pipelines policies: whole at the waypoint, their principal rules and the waypoint at ztunnel', () => {
    const api = spec(get('AuthorizationPolicy', 'kubeflow', 'ml-pipeline'));
    assert.deepEqual(api['targetRefs'], [{ group: '', kind: 'Service', name: 'ml-pipeline' }]);
    assert.equal((api['rules'] as unknown[]).length, 2);
    const l4 = spec(get('AuthorizationPolicy', 'kubeflow', 'ml-pipeline-l4'));
    assert.deepEqual(l4['selector'], { matchLabels: { app: 'ml-pipeline' } });
    const rules = l4['rules'] as { from: { source: { principals: string[] } }[] }[];
    assert.equal(rules.length, 2);
    assert.deepEqual(rules[1]?.from[0]?.source.principals, ['cluster.local/ns/kubeflow/sa/waypoint']);
    // The profile controller's policy stays as it wrote it; the waypoint form goes beside it.
    assert.equal(
      spec(get('AuthorizationPolicy', 'kubeflow-user-example-com', 'ns-owner-access-istio'))['targetRefs'],
      undefined,
    );
    const owner = spec(get('AuthorizationPolicy', 'kubeflow-user-example-com', 'ns-owner-access-waypoint'));
    assert.deepEqual(owner['targetRefs'], [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' },
    ]);
  });

  test('ingress: one Gateway API gateway, an HTTPRoute per component, the edge policies on it', () => {
    const gateway = get('Gateway', 'kubeflow', 'kubeflow-gateway', 'gateway.networking.k8s.io');
    assert.equal(spec(gateway)['gatewayClassName'], 'istio');
    const routes = result.objects
      .filter((o) => o.kind === 'HTTPRoute')
      .map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    assert.equal(routes.length, input.list(GroupKind.VirtualService).length);
    const jupyter = spec(get('HTTPRoute', 'kubeflow', 'jupyter-web-app-jupyter-web-app'));
    assert.deepEqual(jupyter['parentRefs'], [{ name: 'kubeflow-gateway' }]);
    const rule = (jupyter['rules'] as Record<string, unknown>[])[0];
    assert.deepEqual(rule?.['matches'], [{ path: { type: 'PathPrefix', value: '/jupyter/' } }]);
    assert.deepEqual(rule?.['backendRefs'], [{ name: 'jupyter-web-app-service', port: 80 }]);
    const pipelines = (
      spec(get('HTTPRoute', 'kubeflow', 'ml-pipeline-ui'))['rules'] as Record<string, unknown>[]
    )[0];
    assert.deepEqual(pipelines?.['timeouts'], { request: '300s' });
    const dex = spec(get('HTTPRoute', 'auth', 'dex'));
    assert.deepEqual(dex['parentRefs'], [{ name: 'kubeflow-gateway', namespace: 'kubeflow' }]);
    for (const name of [
      'istio-ingressgateway',
      'istio-ingressgateway-oauth2-proxy',
      'istio-ingressgateway-require-jwt',
    ]) {
      assert.deepEqual(spec(get('AuthorizationPolicy', 'kubeflow', name))['targetRefs'], [
        { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'kubeflow-gateway' },
      ]);
      assert.equal(get('AuthorizationPolicy', 'istio-system', name), undefined);
    }
    assert.ok(spec(get('RequestAuthentication', 'kubeflow', 'dex-jwt'))['targetRefs']);
  });

  test('Knative Serving stays in sidecar mode with its gateway, policies and mTLS rule', () => {
    assert.equal(get('Namespace', '', 'knative-serving')?.metadata.labels?.['kfmesh.io/mode'], 'sidecar');
    assert.ok(get('Gateway', 'knative-serving', 'knative-local-gateway', 'networking.istio.io'));
    assert.ok(get('DestinationRule', 'knative-serving', 'knative'));
    assert.ok(get('PeerAuthentication', 'knative-serving', 'webhook'));
    // The mesh-wide Sidecar still scopes the sidecars left; the component exceptions go.
    assert.ok(get('Sidecar', 'istio-system', 'default'));
    assert.equal(get('Sidecar', 'kubeflow', 'ml-pipeline-ui-exception'), undefined);
  });

  test('pods that opted out stay out; pod opt-ins that would keep a sidecar are removed', () => {
    const template = (name: string) =>
      (spec(get('Deployment', 'kubeflow', name))['template'] as { metadata: KubeObject['metadata'] }).metadata
        .labels ?? {};
    assert.equal(template('metadata-envoy-deployment')['istio.io/dataplane-mode'], 'none');
    assert.equal(template('katib-controller')['istio.io/dataplane-mode'], 'none');
    assert.equal(template('centraldashboard')['sidecar.istio.io/inject'], undefined);
  });

  test('the equivalence check finds no request opened', () => {
    const check = checkEquivalence(input, Snapshot.of(result.objects));
    assert.ok(check.requests > 10_000);
    assert.equal(
      check.errors,
      0,
      JSON.stringify(check.groups.filter((g) => g.severity === 'error').slice(0, 2)),
    );
  });
});
