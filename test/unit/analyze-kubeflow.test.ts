/** The Kubeflow platform rules (KFM103, KFM206 to KFM208) on small configurations; the real platform's are in test/cli/analyze-real.test.ts. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only, waypoint } from './analyze-fixtures.ts';

const withTemplateLabels = (objects: KubeObject[], labels: Record<string, string>): KubeObject[] =>
  objects.map((o) => {
    if (o.kind !== 'Deployment') return o;
    const copy = structuredClone(o) as KubeObject & {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    Object.assign(copy.spec.template.metadata.labels, labels);
    return copy;
  });

describe('KFM206 injection-and-ambient', () => {
  test('istio-injection or a revision beside the ambient label; the patch turns injection off', () => {
    const both = ns('team', { 'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient' });
    const found = only([both, ...app('team', 'api')], 'KFM206');
    assert.match(found[0]?.message ?? '', /1 workload\(s\) keep theirs \(api\)/);
    assert.deepEqual(found[0]?.patch, [
      { op: 'replace', path: '/metadata/labels/istio-injection', value: 'disabled' },
    ]);
    assert.equal(
      only([ns('team', { 'istio.io/rev': 'canary', 'istio.io/dataplane-mode': 'ambient' })], 'KFM206').length,
      1,
    );
  });

  test('ambient alone, or injection disabled: nothing', () => {
    assert.deepEqual(only([ns('team', { 'istio.io/dataplane-mode': 'ambient' })], 'KFM206'), []);
    assert.deepEqual(
      only([ns('team', { 'istio-injection': 'disabled', 'istio.io/dataplane-mode': 'ambient' })], 'KFM206'),
      [],
    );
  });
});

describe('KFM207 opted-out-pod-enrolled', () => {
  const ambient = ns('team', { 'istio.io/dataplane-mode': 'ambient' });

  test('an injection opt-out in an ambient namespace: a warning with the label that keeps it out', () => {
    const found = only(
      [ambient, ...withTemplateLabels(app('team', 'db'), { 'sidecar.istio.io/inject': 'false' })],
      'KFM207',
    );
    assert.equal(found[0]?.severity, 'warning');
    assert.deepEqual(found[0]?.patch, [
      { op: 'add', path: '/spec/template/metadata/labels/istio.io~1dataplane-mode', value: 'none' },
    ]);
  });

  test('also out of ambient, or not opted out: nothing', () => {
    const out = withTemplateLabels(app('team', 'db'), {
      'sidecar.istio.io/inject': 'false',
      'istio.io/dataplane-mode': 'none',
    });
    assert.deepEqual(only([ambient, ...out], 'KFM207'), []);
    assert.deepEqual(only([ambient, ...app('team', 'db')], 'KFM207'), []);
  });
});

describe('KFM208 network-policy-blocks-hbone', () => {
  const netpol = (port: number, from: Record<string, unknown>[]): KubeObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'api-ingress', namespace: 'team' },
    spec: {
      podSelector: { matchLabels: { app: 'api' } },
      policyTypes: ['Ingress'],
      ingress: [{ from, ports: [{ port, protocol: 'TCP' }] }],
    },
  });
  const base = [
    ns('team', { 'istio.io/dataplane-mode': 'ambient' }),
    ...app('team', 'api'),
    ...app('team', 'web'),
  ];
  const fromWeb = [{ podSelector: { matchLabels: { app: 'web' } } }];

  test("a port-limited rule admits an ambient peer on the pod's port but not on 15008: traced", () => {
    const found = only([...base, netpol(8080, fromWeb)], 'KFM208');
    assert.match(
      found[0]?.message ?? '',
      /refuses HBONE \(port 15008\) to ambient pods of team\/api: it admits team\/web on port 8080/,
    );
    assert.match(found[0]?.evidence?.[0] ?? '', /from team\/web: .*503 UF|from team\/web: .*0 /);
  });

  test('a rule that admits every peer on the port: a warning (its callers may all be outside the mesh)', () => {
    const found = only([...base, netpol(8080, [])], 'KFM208');
    assert.deepEqual(
      found.map((f) => f.severity),
      ['warning'],
    );
    assert.match(found[0]?.message ?? '', /it admits every peer on port 8080, but mesh traffic/);
  });

  test('a rule that admits 15008 too, or a pod not in ambient: nothing', () => {
    const both: KubeObject = netpol(8080, fromWeb);
    (both.spec as { ingress: { ports: unknown[] }[] }).ingress[0]?.ports.push({
      port: 15008,
      protocol: 'TCP',
    });
    assert.deepEqual(only([...base, both], 'KFM208'), []);
    const sidecars = [
      ns('team', { 'istio-injection': 'enabled' }),
      ...app('team', 'api'),
      ...app('team', 'web'),
    ];
    assert.deepEqual(only([...sidecars, netpol(8080, fromWeb)], 'KFM208'), []);
  });

  test('a waypoint in front of the Service that the policy does not admit', () => {
    const withWaypoint = [
      ns('team', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
      ...app('team', 'api'),
      ...app('team', 'web'),
      waypoint('team'),
    ];
    const found = only([...withWaypoint, netpol(15008, fromWeb)], 'KFM208');
    assert.match(found[0]?.message ?? '', /its waypoint team\/waypoint sends api's traffic/);
  });
});

describe('KFM103 controller-config-names-missing', () => {
  const configMap = (name: string, data: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'kubeflow' },
    data,
  });
  const gateway: KubeObject = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'Gateway',
    metadata: { name: 'kubeflow-gateway', namespace: 'kubeflow' },
    spec: { selector: { istio: 'ingressgateway' }, servers: [] },
  };

  test("the notebook controller's gateway, missing where the input has Gateways", () => {
    const config = configMap('notebook-controller-config', {
      USE_ISTIO: 'true',
      ISTIO_GATEWAY: 'kubeflow/typo-gateway',
    });
    const found = only([gateway, config], 'KFM103');
    assert.equal(found[0]?.field, 'data.ISTIO_GATEWAY');
    assert.deepEqual(only([config], 'KFM103'), [], 'an input without Gateways cannot tell');
    assert.deepEqual(
      only(
        [
          gateway,
          configMap('notebook-controller-config', {
            USE_ISTIO: 'true',
            ISTIO_GATEWAY: 'kubeflow/kubeflow-gateway',
          }),
        ],
        'KFM103',
      ),
      [],
    );
  });

  test("the profile controller's principal, missing where the input has that namespace's service accounts", () => {
    const account: KubeObject = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'ml-pipeline-ui', namespace: 'kubeflow' },
    };
    const config = configMap('profiles-config', {
      KFP_UI_PRINCIPAL: 'cluster.local/ns/kubeflow/sa/ml-pipeline-uii',
    });
    assert.equal(only([account, config], 'KFM103')[0]?.field, 'data.KFP_UI_PRINCIPAL');
    assert.deepEqual(only([config], 'KFM103'), []);
  });
});
