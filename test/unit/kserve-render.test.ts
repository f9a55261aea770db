/** Rendering paths the published conformance cases do not cover. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { inferenceService, inferenceServiceConfig } from '../fixtures.ts';

type Spec = Record<string, unknown>;
const render = (objects: KubeObject[]) => desiredState(Snapshot.of(objects), { mode: 'sidecar' });
const names = (objects: KubeObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);
const specOf = (objects: KubeObject[], kind: string, name: string): Spec => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name} in ${names(objects).join(', ')}`);
  return found['spec'] as Spec;
};

describe('Serverless', () => {
  test('the stop annotation removes every networking object', () => {
    const stopped = inferenceService('m', { annotations: { 'serving.kserve.io/stop': 'true' } });
    const result = render([stopped, inferenceServiceConfig()]);
    assert.deepEqual(result.objects, []);
    assert.equal(result.inferenceServices.get('team/m')?.status?.ingressReady.reason, 'Stopped');
  });

  test('disableIstioVirtualHost renders neither VirtualService nor ExternalName Service', () => {
    assert.deepEqual(
      render([inferenceService('m'), inferenceServiceConfig({ disableIstioVirtualHost: true })]).objects,
      [],
    );
  });

  test('not ready: the ExternalName Service only, as KServe reconciles it before gating the VirtualService', () => {
    const result = render([inferenceService('m', { notReady: ['predictor'] }), inferenceServiceConfig()]);
    assert.deepEqual(names(result.objects), ['Service/m']);
  });

  test('explainer and path template: the path-based explain route rewrites to the captured group', () => {
    const config = inferenceServiceConfig({
      pathTemplate: '/serving/{{ .Namespace }}/{{ .Name }}',
      ingressDomain: 'models.io',
    });
    const spec = specOf(
      render([inferenceService('m', { components: ['explainer'] }), config]).objects,
      'VirtualService',
      'm',
    );
    const http = spec['http'] as Spec[];
    assert.equal(http.length, 4);
    assert.deepEqual(http[2], {
      match: [
        {
          uri: { regex: '/serving/team/m(/v1/models/[\\w-]+:explain)$' },
          authority: { regex: '^models\\.io(?::\\d{1,5})?$' },
          gateways: ['knative-serving/knative-ingress-gateway'],
        },
      ],
      rewrite: { uriRegexRewrite: { match: '/serving/team/m(/v1/models/[\\w-]+:explain)$', rewrite: '\\1' } },
      route: [
        {
          destination: { host: 'knative-local-gateway.istio-system.svc.cluster.local', port: { number: 80 } },
          weight: 100,
        },
      ],
      headers: {
        request: {
          set: {
            Host: 'm-explainer.team.svc.cluster.local',
            'KServe-Isvc-Name': 'm',
            'KServe-Isvc-Namespace': 'team',
          },
        },
      },
    });
    assert.deepEqual(spec['hosts'], ['m.team.svc.cluster.local', 'm.team.example.com', 'models.io']);
  });

  test('the cluster domain flows into hosts, regexes and the Host header', () => {
    const result = desiredState(Snapshot.of([inferenceService('m'), inferenceServiceConfig()]), {
      mode: 'sidecar',
      clusterDomain: 'corp.internal',
    });
    const spec = specOf(result.objects, 'VirtualService', 'm');
    assert.deepEqual((spec['hosts'] as string[])[0], 'm.team.svc.corp.internal');
    assert.match(JSON.stringify(spec), /m-predictor\.team\.svc\.corp\.internal/);
  });

  test('the uid of the InferenceService becomes a controller ownerReference', () => {
    const owned = inferenceService('m');
    owned.metadata.uid = 'u-1';
    for (const object of render([owned, inferenceServiceConfig()]).objects) {
      assert.deepEqual(object.metadata.ownerReferences, [
        {
          apiVersion: 'serving.kserve.io/v1beta1',
          kind: 'InferenceService',
          name: 'm',
          uid: 'u-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
  });

  test('an unknown deployment mode is a problem of that object', () => {
    const result = render([
      inferenceService('m', { annotations: { 'serving.kserve.io/deploymentMode': 'Turbo' } }),
      inferenceServiceConfig(),
    ]);
    assert.deepEqual(result.objects, []);
    assert.match(result.problems[0]?.message ?? '', /unknown deployment mode "Turbo"/);
  });
});

describe('RawDeployment', () => {
  const raw = { annotations: { 'serving.kserve.io/deploymentMode': 'RawDeployment' } };
  const gatewayApi = inferenceServiceConfig({
    enableGatewayApi: true,
    kserveIngressGateway: 'kserve/kserve-ingress-gateway',
  });

  test('HTTPRoutes: component timeouts, disabled timeouts', () => {
    const isvc = inferenceService('m', { ...raw, spec: { predictor: { timeout: 30 } } });
    const rules = specOf(render([isvc, gatewayApi]).objects, 'HTTPRoute', 'm')['rules'] as Spec[];
    assert.deepEqual(rules[0]?.['timeouts'], { request: '30s' });
    const noTimeout = inferenceServiceConfig({
      enableGatewayApi: true,
      kserveIngressGateway: 'kserve/gw',
      disableHTTPRouteTimeout: true,
    });
    const untimed = specOf(render([isvc, noTimeout]).objects, 'HTTPRoute', 'm')['rules'] as Spec[];
    assert.equal(untimed[0]?.['timeouts'], undefined);
  });

  test('HTTPRoutes: a component Service with gRPC and REST ports gives a gRPC rule then a REST rule', () => {
    const service: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'm-predictor', namespace: 'team' },
      spec: {
        ports: [
          { name: 'http', port: 8080 },
          { name: 'grpc', port: 8081, appProtocol: 'kubernetes.io/h2c' },
        ],
      },
    };
    const rules = specOf(
      render([inferenceService('m', raw), gatewayApi, service]).objects,
      'HTTPRoute',
      'm-predictor',
    )['rules'] as Spec[];
    assert.equal(rules.length, 2);
    assert.deepEqual((rules[0]?.['matches'] as Spec[])[0], {
      path: { type: 'RegularExpression', value: '^/inference\\.GRPCInferenceService/.*$' },
      headers: [{ type: 'RegularExpression', name: 'content-type', value: '^application/grpc.*' }],
    });
    assert.deepEqual((rules[0]?.['backendRefs'] as Spec[])[0]?.['port'], 8081);
    assert.deepEqual((rules[1]?.['backendRefs'] as Spec[])[0]?.['port'], 8080);
  });

  test('cluster-local, the internal domain and disableIngressCreation render nothing', () => {
    const local = inferenceService('m', {
      annotations: raw.annotations,
      labels: { 'networking.kserve.io/visibility': 'cluster-local' },
    });
    assert.deepEqual(render([local, gatewayApi]).objects, []);
    assert.deepEqual(
      render([
        inferenceService('m', raw),
        inferenceServiceConfig({
          enableGatewayApi: true,
          kserveIngressGateway: 'a/b',
          ingressDomain: 'svc.cluster.local',
        }),
      ]).objects,
      [],
    );
    assert.deepEqual(
      render([inferenceService('m', raw), inferenceServiceConfig({ disableIngressCreation: true })]).objects,
      [],
    );
  });

  test('the Kubernetes Ingress when the Gateway API is off: hosts per component, as KServe writes them', () => {
    const plain = inferenceServiceConfig({ ingressClassName: 'istio' });
    const rulesOf = (isvc: KubeObject) =>
      (specOf(render([isvc, plain]).objects, 'Ingress', 'm')['rules'] as Spec[]).map((r) => {
        const paths = (r['http'] as { paths: { backend: { service: { name: string } } }[] }).paths;
        return `${String(r['host'])} -> ${paths[0]?.backend.service.name}`;
      });
    assert.deepEqual(rulesOf(inferenceService('m', raw)), [
      'm-team.example.com -> m-predictor',
      'm-predictor-team.example.com -> m-predictor',
    ]);
    assert.deepEqual(rulesOf(inferenceService('m', { ...raw, components: ['explainer'] })), [
      'm-team.example.com -> m-predictor',
      'm-explainer-team.example.com -> m-explainer',
      'm-predictor-team.example.com -> m-predictor',
    ]);
    assert.deepEqual(rulesOf(inferenceService('m', { ...raw, components: ['transformer'] })), [
      'm-team.example.com -> m-transformer',
      'm-transformer-team.example.com -> m-predictor',
      'm-predictor-team.example.com -> m-predictor',
    ]);
    const ingress = render([inferenceService('m', raw), plain]).objects[0] as KubeObject;
    assert.equal((ingress['spec'] as Spec)['ingressClassName'], 'istio');
  });

  test('a domain template that cannot form a host is a problem naming the template', () => {
    const bad = inferenceServiceConfig({
      enableGatewayApi: true,
      kserveIngressGateway: 'a/b',
      domainTemplate: '{{ .Name }}_{{ .Namespace }}.{{ .IngressDomain }}',
    });
    const result = render([inferenceService('m', raw), bad]);
    assert.deepEqual(result.objects, []);
    assert.match(
      result.problems[0]?.message ?? '',
      /domain template .* gives "m-predictor_team\.example\.com", which is not a valid host name/,
    );
  });
});
