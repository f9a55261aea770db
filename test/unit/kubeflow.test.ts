/** Profiles and Notebooks in both modes, the per-namespace mode label, and InferenceServices in ambient mode. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { inferenceService, inferenceServiceConfig } from '../fixtures.ts';

const profile = (name: string, owner = 'user@example.com', uid?: string): KubeObject => ({
  apiVersion: 'kubeflow.org/v1',
  kind: 'Profile',
  metadata: { name, ...(uid ? { uid } : {}) },
  spec: { owner: { kind: 'User', name: owner } },
});
const ns = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});
const render = (objects: KubeObject[], mode: 'sidecar' | 'ambient' = 'sidecar') =>
  desiredState(Snapshot.of(objects), { mode });
const find = (objects: KubeObject[], kind: string, name: string, namespace?: string): KubeObject => {
  const found = objects.find(
    (o) =>
      o.kind === kind &&
      o.metadata.name === name &&
      (namespace === undefined || o.metadata.namespace === namespace),
  );
  assert.ok(
    found,
    `${kind} ${namespace ?? ''}/${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`,
  );
  return found;
};

describe('Profiles in sidecar mode (the profile controller’s objects)', () => {
  test('ns-owner-access-istio equals the profile controller’s policy, field by field', () => {
    const expected = parse(`
apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata:
  name: ns-owner-access-istio
  namespace: kubeflow-user-example-com
  annotations: {user: user@example.com, role: admin}
spec:
  action: ALLOW
  rules:
  - when:
    - key: request.headers[kubeflow-userid]
      values: ["user@example.com"]
    from:
    - source:
        principals:
        - cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account
        - cluster.local/ns/kubeflow/sa/ml-pipeline-ui
  - when:
    - key: source.namespace
      values: ["kubeflow-user-example-com"]
  - to:
    - operation:
        paths: ["/healthz", "/metrics", "/wait-for-drain"]
  - from:
    - source:
        principals: ["cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]
    to:
    - operation:
        methods: ["GET"]
        paths: ["*/api/kernels"]
`) as KubeObject;
    const policy = find(
      render([profile('kubeflow-user-example-com')]).objects,
      'AuthorizationPolicy',
      'ns-owner-access-istio',
    );
    assert.deepEqual(policy, expected);
  });

  test('namespace labels: istio-injection, then the labels file (added if absent, "" removes); owner annotation', () => {
    const labels: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'namespace-labels-data', namespace: 'kubeflow' },
      data: {
        'namespace-labels.yaml':
          'katib.kubeflow.org/metrics-collector-injection: "enabled"\nistio-injection: "disabled"\npipelines.kubeflow.org/enabled: "true"\napp.kubernetes.io/part-of: ""\n',
      },
    };
    const namespace = find(render([profile('team-a'), labels]).objects, 'Namespace', 'team-a');
    assert.deepEqual(namespace.metadata.labels, {
      'istio-injection': 'enabled',
      'katib.kubeflow.org/metrics-collector-injection': 'enabled',
      'pipelines.kubeflow.org/enabled': 'true',
    });
    assert.deepEqual(namespace.metadata.annotations, { owner: 'user@example.com' });
  });

  test('settings from the profile controller’s ConfigMap; an ownerReference to the Profile when its uid is known', () => {
    const settings: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'profiles-config-46c7tgh6fd', namespace: 'kubeflow' },
      data: { USERID_HEADER: 'x-user', USERID_PREFIX: 'accounts:' },
    };
    const policy = find(
      render([profile('team-a', 'a@b.c', 'uid-1'), settings]).objects,
      'AuthorizationPolicy',
      'ns-owner-access-istio',
    );
    const rules = (policy['spec'] as { rules: { when?: { key: string; values: string[] }[] }[] }).rules;
    assert.deepEqual(rules[0]?.when, [{ key: 'request.headers[x-user]', values: ['accounts:a@b.c'] }]);
    assert.equal(policy.metadata.ownerReferences?.[0]?.kind, 'Profile');
    assert.equal(policy.metadata.ownerReferences?.[0]?.uid, 'uid-1');
  });
});

describe('Profiles in ambient mode (KEP-2676)', () => {
  const objects = render([profile('team-a')], 'ambient').objects;

  test('namespace labels: ambient, the waypoint for services and for ingress; sidecar injection disabled', () => {
    assert.deepEqual(find(objects, 'Namespace', 'team-a').metadata.labels, {
      'istio-injection': 'disabled',
      'istio.io/dataplane-mode': 'ambient',
      'istio.io/use-waypoint': 'waypoint',
      'istio.io/ingress-use-waypoint': 'true',
    });
  });

  test('a waypoint of its own: class istio-waypoint, HBONE listener on 15008, for services', () => {
    const waypoint = find(objects, 'Gateway', 'waypoint', 'team-a');
    assert.deepEqual(waypoint['spec'], {
      gatewayClassName: 'istio-waypoint',
      listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
    });
    assert.equal(waypoint.metadata.labels?.['istio.io/waypoint-for'], 'service');
    assert.equal(waypoint.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
    assert.equal(waypoint.metadata.labels?.['kfmesh.io/owner-kind'], 'Profile');
  });

  test('the owner policy targets the waypoint, with the Gateway API ingress principal in place of the Istio ingress', () => {
    // Under kfmesh's name: the profile controller rewrites ns-owner-access-istio to its sidecar form.
    assert.ok(!objects.some((o) => o.metadata.name === 'ns-owner-access-istio'));
    const policy = find(objects, 'AuthorizationPolicy', 'ns-owner-access-waypoint');
    const spec = policy['spec'] as {
      targetRefs: unknown;
      selector?: unknown;
      rules: { from?: { source: { principals: string[] } }[] }[];
    };
    assert.deepEqual(spec.targetRefs, [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' },
    ]);
    assert.equal(spec.selector, undefined);
    assert.deepEqual(spec.rules[0]?.from?.[0]?.source.principals, [
      'cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio',
      'cluster.local/ns/kubeflow/sa/ml-pipeline-ui',
    ]);
    assert.equal(spec.rules.length, 4);
  });

  test('the L4 policy admits the waypoint’s identity and the namespace itself', () => {
    const policy = find(objects, 'AuthorizationPolicy', 'ns-l4-waypoint');
    assert.deepEqual(policy['spec'], {
      action: 'ALLOW',
      rules: [
        { from: [{ source: { principals: ['cluster.local/ns/team-a/sa/waypoint'] } }] },
        { from: [{ source: { namespaces: ['team-a'] } }] },
      ],
    });
  });
});

describe('Notebooks', () => {
  const notebook: KubeObject = {
    apiVersion: 'kubeflow.org/v1',
    kind: 'Notebook',
    metadata: {
      name: 'lab',
      namespace: 'team-a',
      uid: 'nb-1',
      annotations: {
        'notebooks.kubeflow.org/http-rewrite-uri': '/',
        'notebooks.kubeflow.org/http-headers-request-set': '{"X-RStudio-Root-Path":"/notebook/team-a/lab/"}',
      },
    },
    spec: {},
  };

  test('sidecar mode: the notebook controller’s VirtualService', () => {
    const vs = find(render([notebook]).objects, 'VirtualService', 'notebook-team-a-lab');
    assert.equal(vs.apiVersion, 'networking.istio.io/v1alpha3');
    assert.deepEqual(vs['spec'], {
      hosts: ['*'],
      gateways: ['kubeflow/kubeflow-gateway'],
      http: [
        {
          headers: { request: { set: { 'X-RStudio-Root-Path': '/notebook/team-a/lab/' } } },
          match: [{ uri: { prefix: '/notebook/team-a/lab/' } }],
          rewrite: { uri: '/' },
          route: [{ destination: { host: 'lab.team-a.svc.cluster.local', port: { number: 80 } } }],
        },
      ],
    });
    assert.equal(vs.metadata.ownerReferences?.[0]?.kind, 'Notebook');
  });

  test('ambient mode: an HTTPRoute on the Gateway API ingress with the same rewrite and headers', () => {
    const route = find(render([notebook], 'ambient').objects, 'HTTPRoute', 'notebook-team-a-lab');
    assert.deepEqual(route['spec'], {
      parentRefs: [
        {
          group: 'gateway.networking.k8s.io',
          kind: 'Gateway',
          namespace: 'kubeflow',
          name: 'kubeflow-gateway',
        },
      ],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/notebook/team-a/lab/' } }],
          backendRefs: [{ name: 'lab', port: 80 }],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'X-RStudio-Root-Path', value: '/notebook/team-a/lab/' }],
              },
            },
            {
              type: 'URLRewrite',
              urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } },
            },
          ],
        },
      ],
    });
  });
});

describe('the mode of each namespace', () => {
  test('the namespace label overrides --mode both ways; a bad value is a problem of the namespace', () => {
    const objects = [
      profile('one'),
      profile('two'),
      ns('one', { 'kfmesh.io/mode': 'ambient' }),
      ns('two', { 'kfmesh.io/mode': 'sidecar' }),
    ];
    const sidecarDefault = render(objects);
    assert.equal(sidecarDefault.modes.get('one'), 'ambient');
    assert.ok(sidecarDefault.objects.some((o) => o.kind === 'Gateway' && o.metadata.namespace === 'one'));
    const ambientDefault = render(objects, 'ambient');
    assert.equal(ambientDefault.modes.get('two'), 'sidecar');
    assert.ok(!ambientDefault.objects.some((o) => o.kind === 'Gateway' && o.metadata.namespace === 'two'));
    const bad = render([profile('one'), ns('one', { 'kfmesh.io/mode': 'hybrid' })]);
    assert.match(bad.problems[0]?.message ?? '', /expected sidecar or ambient, got "hybrid"/);
  });
});

describe('InferenceServices in ambient mode', () => {
  const raw = inferenceService('m', {
    namespace: 'models',
    annotations: { 'serving.kserve.io/deploymentMode': 'RawDeployment' },
    components: ['explainer'],
  });
  const gatewayApi = inferenceServiceConfig({
    enableGatewayApi: true,
    kserveIngressGateway: 'kserve/kserve-ingress-gateway',
  });

  test('RawDeployment: KServe’s HTTPRoutes, plus a top-level Service and a mesh HTTPRoute for the waypoint', () => {
    const { objects } = render([raw, gatewayApi], 'ambient');
    assert.ok(
      objects.some((o) => o.kind === 'HTTPRoute' && o.metadata.name === 'm-predictor'),
      'KServe’s own routes stay',
    );
    const service = find(objects, 'Service', 'm', 'models');
    assert.equal((service['spec'] as { selector?: unknown }).selector, undefined);
    const mesh = find(objects, 'HTTPRoute', 'm-mesh', 'models');
    const spec = mesh['spec'] as {
      parentRefs: unknown;
      rules: { matches: unknown; backendRefs: { name: string }[] }[];
    };
    assert.deepEqual(spec.parentRefs, [{ group: '', kind: 'Service', name: 'm', port: 80 }]);
    assert.deepEqual(
      spec.rules.map((r) => r.backendRefs[0]?.name),
      ['m-explainer', 'm-predictor'],
    );
    assert.deepEqual(spec.rules[0]?.matches, [
      { path: { type: 'RegularExpression', value: '^/v1/models/[\\w-]+:explain$' } },
    ]);
  });

  test('the model namespace gets the ambient labels and a waypoint, unless it has one', () => {
    const { objects } = render([raw, gatewayApi], 'ambient');
    assert.deepEqual(
      find(objects, 'Namespace', 'models').metadata.labels?.['istio.io/dataplane-mode'],
      'ambient',
    );
    find(objects, 'Gateway', 'waypoint', 'models');
    const existing: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'shared', namespace: 'models' },
      spec: { gatewayClassName: 'istio-waypoint' },
    };
    assert.ok(
      !render([raw, gatewayApi, existing], 'ambient').objects.some(
        (o) => o.kind === 'Gateway' && o.metadata.name === 'waypoint',
      ),
    );
  });

  test('Serverless in an ambient namespace: the sidecar-mode objects and a finding that says why and what to do', () => {
    const result = render(
      [inferenceService('s', { namespace: 'models' }), inferenceServiceConfig()],
      'ambient',
    );
    assert.ok(result.objects.some((o) => o.kind === 'VirtualService' && o.metadata.name === 's'));
    assert.equal(result.findings[0]?.code, 'KFM301');
    assert.match(result.findings[0]?.fix ?? '', /RawDeployment/);
  });
});

describe('mixed meshes: what each pairing needs', () => {
  const meshConfig = (hbone: boolean): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'istio', namespace: 'istio-system' },
    data: {
      mesh: hbone
        ? 'defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\n'
        : 'rootNamespace: istio-system\n',
    },
  });
  const codes = (objects: KubeObject[], mode: 'sidecar' | 'ambient' = 'sidecar') =>
    render(objects, mode).findings.map((f) => f.code);

  test('both modes without HBONE on sidecars: KFM302; with it, none', () => {
    const platform = [profile('one'), ns('one', { 'kfmesh.io/mode': 'ambient' }), profile('two')];
    assert.ok(codes([...platform, meshConfig(false)]).includes('KFM302'));
    assert.ok(!codes([...platform, meshConfig(true)]).includes('KFM302'));
  });

  test('an ambient Profile whose owner-policy callers run with sidecars: KFM303 per caller; none once their namespace is ambient', () => {
    const ambientProfile = [profile('one'), ns('one', { 'kfmesh.io/mode': 'ambient' })];
    assert.deepEqual(codes(ambientProfile).filter((c) => c === 'KFM303').length, 2);
    assert.deepEqual(
      codes([...ambientProfile, ns('kubeflow', { 'kfmesh.io/mode': 'ambient' })]).filter(
        (c) => c === 'KFM303',
      ),
      [],
    );
    assert.deepEqual(codes([profile('one')], 'ambient'), []);
  });

  test('--mode ambient leaves the platform’s own namespaces as their labels say: callers there with sidecars get KFM303', () => {
    // As on the real platform: kubeflow (pipelines UI, notebook controller) injects sidecars, and kfmesh
    // does not relabel it when rendering Profiles in ambient mode.
    const platform = [profile('one'), ns('kubeflow', { 'istio-injection': 'enabled' })];
    assert.equal(codes(platform, 'ambient').filter((c) => c === 'KFM303').length, 2);
    assert.ok(codes(platform, 'ambient').includes('KFM302'));
    // Both labels (upstream's ambient overlay): injection still gives the pods sidecars.
    const halfAmbient = ns('kubeflow', {
      'istio-injection': 'enabled',
      'istio.io/dataplane-mode': 'ambient',
    });
    assert.equal(codes([profile('one'), halfAmbient], 'ambient').filter((c) => c === 'KFM303').length, 2);
    const ambientKubeflow = ns('kubeflow', { 'istio.io/dataplane-mode': 'ambient' });
    assert.deepEqual(
      codes([profile('one'), ambientKubeflow], 'ambient').filter((c) => c === 'KFM303'),
      [],
    );
  });
});

describe('the ingress identity an ambient owner policy admits: the gateways the input has', () => {
  const istioGateway: KubeObject = {
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'Gateway',
    metadata: { name: 'kubeflow-gateway', namespace: 'kubeflow' },
    spec: { selector: { istio: 'ingressgateway' }, servers: [] },
  };
  const gatewayApi: KubeObject = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'kubeflow-gateway', namespace: 'kubeflow' },
    spec: { gatewayClassName: 'istio', listeners: [] },
  };
  const admitted = (objects: KubeObject[]) => {
    const policy = find(
      render([profile('one'), ...objects], 'ambient').objects,
      'AuthorizationPolicy',
      'ns-owner-access-waypoint',
    );
    return (policy['spec'] as { rules: { from?: { source: { principals: string[] } }[] }[] }).rules[0]
      ?.from?.[0]?.source.principals;
  };
  const ui = 'cluster.local/ns/kubeflow/sa/ml-pipeline-ui';
  const istioIngress = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';
  const gatewayApiIngress = 'cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio';

  test('only the Istio ingress gateway (a platform not migrated yet): its identity, from profiles-config', () => {
    assert.deepEqual(admitted([istioGateway]), [istioIngress, ui]);
  });

  test('both gateways (the old one kept for the controllers): both identities', () => {
    assert.deepEqual(admitted([istioGateway, gatewayApi]), [gatewayApiIngress, istioIngress, ui]);
  });

  test('only the Gateway API ingress, or no gateway yet: the Gateway API ingress’s', () => {
    assert.deepEqual(admitted([gatewayApi]), [gatewayApiIngress, ui]);
    assert.deepEqual(admitted([]), [gatewayApiIngress, ui]);
  });
});
