import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InferenceService } from '../../src/model/inference-service.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { kserveConfigFrom, type KServeConfig } from '../../src/kserve/config.ts';
import { ingressStatusFor } from '../../src/kserve/status.ts';

const baseConfig = kserveConfigFrom(new Snapshot([]));
const config = (ingress: Partial<KServeConfig['ingress']>): KServeConfig => ({
  ...baseConfig,
  ingress: { ...baseConfig.ingress, ...ingress },
});

function isvc(components: Record<string, string>, spec: Record<string, unknown> = {}): InferenceService {
  return {
    apiVersion: 'serving.kserve.io/v1beta1',
    kind: 'InferenceService',
    metadata: { name: 'my-model', namespace: 'test' },
    spec: { predictor: {}, ...spec },
    status: { components: Object.fromEntries(Object.entries(components).map(([c, url]) => [c, { url }])) },
  };
}

const empty = Snapshot.of([]);

describe('ingressStatusFor, Serverless (KServe TestGetServiceUrl / TestGetHostPrefix)', () => {
  test('predictor url without default suffix', () => {
    const status = ingressStatusFor(
      isvc({ predictor: 'http://my-model-predictor.example.com' }),
      'Serverless',
      baseConfig,
      empty,
    );
    assert.equal(status.url, 'http://my-model.example.com');
    assert.equal(status.addressUrl, 'http://my-model.test.svc.cluster.local');
    assert.equal(status.ingressReady.status, 'True');
  });

  test('predictor url with default suffix, transformer takes precedence', () => {
    assert.equal(
      ingressStatusFor(
        isvc({ predictor: 'http://my-model-predictor-default.example.com' }),
        'Serverless',
        baseConfig,
        empty,
      ).url,
      'http://my-model.example.com',
    );
    const withTransformer = isvc(
      {
        predictor: 'http://my-model-predictor.example.com',
        transformer: 'http://my-model-transformer.example.com',
      },
      { transformer: {} },
    );
    assert.equal(
      ingressStatusFor(withTransformer, 'Serverless', baseConfig, empty).url,
      'http://my-model.example.com',
    );
  });

  test('no url yet: not ready, no url', () => {
    const status = ingressStatusFor(isvc({}), 'Serverless', baseConfig, empty);
    assert.equal(status.url, undefined);
    assert.equal(status.ingressReady.status, 'Unknown');
  });

  test('Istio virtual host disabled: the component url and Service', () => {
    const disabled = config({ disableIstioVirtualHost: true });
    const status = ingressStatusFor(
      isvc({ predictor: 'http://my-model-predictor.example.com' }),
      'Serverless',
      disabled,
      empty,
    );
    assert.equal(status.url, 'http://my-model-predictor.example.com');
    assert.equal(status.addressUrl, 'http://my-model-predictor.test.svc.cluster.local');
    const transformer = isvc({ transformer: 'http://my-model-transformer.example.com' }, { transformer: {} });
    assert.equal(
      ingressStatusFor(transformer, 'Serverless', disabled, empty).addressUrl,
      'http://my-model-transformer.test.svc.cluster.local',
    );
  });

  test('path template (TestGetServiceUrlPathBased)', () => {
    const pathBased = config({
      ingressDomain: 'my-domain.com',
      pathTemplate: '/serving/{{ .Namespace }}/{{ .Name }}',
    });
    assert.equal(
      ingressStatusFor(
        isvc({ predictor: 'http://my-model-predictor.example.com' }),
        'Serverless',
        pathBased,
        empty,
      ).url,
      'http://my-domain.com/serving/test/my-model',
    );
  });

  test('stopped', () => {
    const stopped = isvc({ predictor: 'http://my-model-predictor.example.com' });
    stopped.metadata.annotations = { 'serving.kserve.io/stop': 'true' };
    assert.deepEqual(ingressStatusFor(stopped, 'Serverless', baseConfig, empty), {
      ingressReady: { status: 'False', reason: 'Stopped' },
    });
  });
});

describe('ingressStatusFor, RawDeployment (TestCreateRawURL / TestCreateAddress)', () => {
  test('domain template url and ClusterIP address', () => {
    const status = ingressStatusFor(
      isvc({}),
      'RawDeployment',
      config({ domainTemplate: '{{.Name}}-{{.Namespace}}.{{.IngressDomain}}' }),
      empty,
    );
    assert.equal(status.url, 'http://my-model-test.example.com');
    assert.equal(status.addressUrl, 'http://my-model-predictor.test.svc.cluster.local');
  });

  test('headless entry Service: first non-gRPC numeric target port, else 8080', () => {
    const service = (ports: unknown[]) =>
      Snapshot.of([
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'my-model-predictor', namespace: 'test' },
          spec: { clusterIP: 'None', ports },
        },
      ]);
    assert.equal(
      ingressStatusFor(isvc({}), 'RawDeployment', baseConfig, service([])).addressUrl,
      'http://my-model-predictor.test.svc.cluster.local:8080',
    );
    assert.equal(
      ingressStatusFor(
        isvc({}),
        'RawDeployment',
        baseConfig,
        service([
          { name: 'grpc', targetPort: 9000 },
          { name: 'http', targetPort: 8888 },
        ]),
      ).addressUrl,
      'http://my-model-predictor.test.svc.cluster.local:8888',
    );
    assert.equal(
      ingressStatusFor(isvc({}), 'RawDeployment', baseConfig, service([{ name: 'http', targetPort: 'http' }]))
        .addressUrl,
      'http://my-model-predictor.test.svc.cluster.local:8080',
    );
  });
});
