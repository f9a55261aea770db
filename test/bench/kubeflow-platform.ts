/**
 * A Kubeflow platform at scale in sidecar mode, for the migration benchmark: Kubeflow's components,
 * gateways and edge policies (as the example ships them), and `profiles` Profile namespaces holding
 * `models` RawDeployment InferenceServices between them, each namespace with the profile controller's
 * owner policy and a notebook, each model with its predictor, Service, ALLOW policy and ingress route.
 */
import type { KubeObject } from '../../src/model/object.ts';
import { gatewayDeployment, kubeflowSidecarObjects } from '../../src/example/kubeflow.ts';
import { defaultKubeflowConfig } from '../../src/kubeflow/config.ts';
import { profileObjects } from '../../src/kubeflow/profile.ts';

const namespace = (name: string, labels: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

function workload(
  ns: string,
  name: string,
  labels: Record<string, string>,
  sa: string,
  port: number,
): KubeObject[] {
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { serviceAccountName: sa, containers: [{ name, ports: [{ containerPort: port }] }] },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: port }] },
    },
  ];
}

function route(ns: string, name: string, host: string, prefix: string, backend: string): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'VirtualService',
    metadata: { name, namespace: ns },
    spec: {
      gateways: ['kubeflow/kubeflow-gateway'],
      hosts: [host],
      http: [
        {
          match: [{ uri: { prefix } }],
          rewrite: { uri: prefix },
          route: [{ destination: { host: `${backend}.${ns}.svc.cluster.local`, port: { number: 80 } } }],
        },
      ],
    },
  };
}

export function kubeflowBenchPlatform(profiles: number, models: number): KubeObject[] {
  const objects: KubeObject[] = [
    namespace('istio-system', { 'istio-injection': 'disabled' }),
    namespace('kubeflow', { 'istio-injection': 'enabled' }),
    namespace('auth', {}),
    namespace('oauth2-proxy', {}),
    ...kubeflowSidecarObjects(),
    gatewayDeployment(
      'istio-ingressgateway',
      { app: 'istio-ingressgateway', istio: 'ingressgateway' },
      'istio-ingressgateway-service-account',
    ),
  ];
  for (let p = 0; p < profiles; p++) {
    const ns = `user-${p}`;
    const profile: KubeObject = {
      apiVersion: 'kubeflow.org/v1',
      kind: 'Profile',
      metadata: { name: ns },
      spec: { owner: { kind: 'User', name: `user-${p}@example.com` } },
    };
    objects.push(profile, ...profileObjects(profile, defaultKubeflowConfig, 'sidecar'));
    objects.push(
      ...workload(ns, 'notebook', { statefulset: 'notebook' }, 'default-editor', 8888),
      route(ns, 'notebook', '*', `/notebook/${ns}/notebook/`, 'notebook'),
    );
  }
  for (let m = 0; m < models; m++) {
    const ns = `user-${m % Math.max(profiles, 1)}`;
    const name = `model-${m}`;
    const labels = { app: `${name}-predictor`, 'serving.kserve.io/inferenceservice': name };
    objects.push(
      {
        apiVersion: 'serving.kserve.io/v1beta1',
        kind: 'InferenceService',
        metadata: {
          name,
          namespace: ns,
          annotations: { 'serving.kserve.io/deploymentMode': 'RawDeployment' },
        },
        spec: {
          predictor: { model: { modelFormat: { name: 'sklearn' }, storageUri: 'gs://models/sklearn' } },
        },
      },
      ...workload(ns, `${name}-predictor`, labels, 'default', 8080),
      route(ns, name, `${name}-${ns}.example.com`, '/', `${name}-predictor`),
      {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: { name: `allow-isvc-${name}`, namespace: ns },
        spec: {
          action: 'ALLOW',
          selector: { matchLabels: { 'serving.kserve.io/inferenceservice': name } },
          rules: [{}],
        },
      },
    );
  }
  return objects;
}
