/** The generated platform the render benchmark measures: mixed InferenceServices in one snapshot. */
import type { KubeObject } from '../../src/model/object.ts';
import { inferenceServiceConfig } from '../fixtures.ts';

/** The platform: KServe's config with a path template and the Gateway API on, and `count` InferenceServices. */
export function benchPlatform(count: number): KubeObject[] {
  const objects: KubeObject[] = [
    inferenceServiceConfig(
      {
        enableGatewayApi: true,
        kserveIngressGateway: 'kserve/kserve-ingress-gateway',
        pathTemplate: '/serving/{{ .Namespace }}/{{ .Name }}',
        ingressDomain: 'example.com',
        additionalIngressDomains: ['models.example.org'],
      },
      { inferenceService: '{}' },
    ),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'config-domain', namespace: 'knative-serving' },
      data: { 'example.com': '' },
    },
  ];
  for (let i = 0; i < count; i++) {
    const name = `model-${i}`;
    const namespace = `team-${i % 50}`;
    const components = [
      'predictor',
      ...(i % 3 === 1 ? ['transformer'] : []),
      ...(i % 4 === 2 ? ['explainer'] : []),
    ];
    const raw = i % 5 === 0;
    objects.push({
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: {
        name,
        namespace,
        labels: { team: namespace },
        annotations: { 'serving.kserve.io/deploymentMode': raw ? 'RawDeployment' : 'Serverless' },
      },
      spec: Object.fromEntries(components.map((c) => [c, { model: { modelFormat: { name: 'sklearn' } } }])),
      status: {
        conditions: components.map((c) => ({
          type: `${c[0]?.toUpperCase()}${c.slice(1)}Ready`,
          status: 'True',
        })),
        components: Object.fromEntries(
          components.map((c) => [c, { url: `http://${name}-${c}.${namespace}.example.com` }]),
        ),
      },
    });
  }
  return objects;
}
