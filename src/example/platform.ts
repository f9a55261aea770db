/**
 * The built-in example platform: KServe on Knative over Istio in sidecar mode, with the configuration
 * objects KServe, Knative and Istio install and InferenceServices of every shape in two user namespaces.
 * Values are the ones the projects ship (KServe's `inferenceservice-config`, net-istio's gateways).
 */
import type { KubeObject } from '../model/object.ts';
import { toYaml } from '../model/serialize.ts';

const domain = 'example.com';

function namespace(name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
  };
}

/** A Serverless InferenceService as KServe reports it once every component is ready. */
function inferenceService(
  name: string,
  ns: string,
  spec: Record<string, unknown>,
  labels: Record<string, string> = {},
): KubeObject {
  const components = Object.keys(spec).filter((c) => ['predictor', 'transformer', 'explainer'].includes(c));
  const local = labels['networking.knative.dev/visibility'] === 'cluster-local';
  const statusComponents: Record<string, unknown> = {};
  for (const c of components) {
    const host = local ? `${name}-${c}.${ns}.svc.cluster.local` : `${name}-${c}.${ns}.${domain}`;
    statusComponents[c] = {
      url: `http://${host}`,
      address: { url: `http://${name}-${c}.${ns}.svc.cluster.local` },
    };
  }
  const ready = (type: string) => ({ type, status: 'True' });
  return {
    apiVersion: 'serving.kserve.io/v1beta1',
    kind: 'InferenceService',
    metadata: {
      name,
      namespace: ns,
      labels,
      annotations: { 'serving.kserve.io/deploymentMode': 'Serverless' },
    },
    spec,
    status: {
      conditions: [
        ...components.map((c) => ready(`${c.charAt(0).toUpperCase()}${c.slice(1)}Ready`)),
        ready('Ready'),
      ],
      components: statusComponents,
    },
  };
}

const sklearn = (storageUri: string) => ({ model: { modelFormat: { name: 'sklearn' }, storageUri } });

/** The objects of the example platform, in sidecar mode. */
export function examplePlatform(): KubeObject[] {
  const userNs = 'kubeflow-user-example-com';
  const teamNs = 'ml-team';
  return [
    namespace('istio-system'),
    namespace('knative-serving'),
    namespace('kserve'),
    namespace(userNs, { 'istio-injection': 'enabled', 'app.kubernetes.io/part-of': 'kubeflow-profile' }),
    namespace(teamNs, { 'istio-injection': 'enabled' }),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: {
        mesh: 'rootNamespace: istio-system\ntrustDomain: cluster.local\noutboundTrafficPolicy:\n  mode: ALLOW_ANY\n',
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'inferenceservice-config', namespace: 'kserve' },
      data: {
        deploy: '{"defaultDeploymentMode": "Serverless"}',
        ingress: JSON.stringify(
          {
            enableGatewayApi: false,
            kserveIngressGateway: 'kserve/kserve-ingress-gateway',
            ingressGateway: 'knative-serving/knative-ingress-gateway',
            localGateway: 'knative-serving/knative-local-gateway',
            localGatewayService: 'knative-local-gateway.istio-system.svc.cluster.local',
            ingressDomain: domain,
            ingressClassName: 'istio',
            domainTemplate: '{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}',
            urlScheme: 'http',
            disableIstioVirtualHost: false,
            disableIngressCreation: false,
          },
          null,
          2,
        ),
        inferenceService:
          '{"resource": {"cpuLimit": "1", "memoryLimit": "2Gi", "cpuRequest": "1", "memoryRequest": "2Gi"}}',
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'config-domain', namespace: 'knative-serving' },
      data: { [domain]: '' },
    },
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'Gateway',
      metadata: { name: 'knative-ingress-gateway', namespace: 'knative-serving' },
      spec: {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'Gateway',
      metadata: { name: 'knative-local-gateway', namespace: 'knative-serving' },
      spec: {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 8081, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'istio-ingressgateway',
        namespace: 'istio-system',
        labels: { app: 'istio-ingressgateway', istio: 'ingressgateway' },
      },
      spec: {
        type: 'ClusterIP',
        selector: { app: 'istio-ingressgateway', istio: 'ingressgateway' },
        ports: [
          { name: 'status-port', port: 15021, targetPort: 15021 },
          { name: 'http2', port: 80, targetPort: 8080 },
          { name: 'https', port: 443, targetPort: 8443 },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'knative-local-gateway',
        namespace: 'istio-system',
        labels: {
          'networking.knative.dev/ingress-provider': 'istio',
          'experimental.istio.io/disable-gateway-port-translation': 'true',
        },
      },
      spec: {
        type: 'ClusterIP',
        selector: { istio: 'ingressgateway' },
        ports: [{ name: 'http2', port: 80, targetPort: 8081 }],
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'istio-ingressgateway',
        namespace: 'istio-system',
        labels: { app: 'istio-ingressgateway', istio: 'ingressgateway' },
      },
      spec: {
        selector: { matchLabels: { app: 'istio-ingressgateway', istio: 'ingressgateway' } },
        template: {
          metadata: {
            labels: {
              app: 'istio-ingressgateway',
              istio: 'ingressgateway',
              'sidecar.istio.io/inject': 'false',
            },
          },
          spec: {
            serviceAccountName: 'istio-ingressgateway-service-account',
            containers: [{ name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0' }],
          },
        },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'curl-inside-mesh', namespace: userNs, labels: { app: 'curl-inside-mesh' } },
      spec: {
        selector: { matchLabels: { app: 'curl-inside-mesh' } },
        template: {
          metadata: { labels: { app: 'curl-inside-mesh' } },
          spec: {
            serviceAccountName: 'default-editor',
            containers: [{ name: 'curl', image: 'curlimages/curl:8.10.1', command: ['sleep', 'infinity'] }],
          },
        },
      },
    },
    inferenceService('sklearn-iris', userNs, {
      predictor: sklearn('gs://kfserving-examples/models/sklearn/1.0/model'),
    }),
    inferenceService('sentiment', teamNs, {
      predictor: {
        model: {
          modelFormat: { name: 'huggingface' },
          storageUri: 'hf://distilbert/distilbert-base-uncased-finetuned-sst-2-english',
        },
      },
      transformer: { containers: [{ name: 'kserve-container', image: 'kserve/image-transformer:latest' }] },
    }),
    inferenceService('income', teamNs, {
      predictor: sklearn('gs://kfserving-examples/models/sklearn/1.0/income/model'),
      explainer: { art: { type: 'SquareAttack', config: { nb_classes: '10' } } },
    }),
    inferenceService(
      'fraud-scorer',
      teamNs,
      { predictor: sklearn('gs://kfserving-examples/models/sklearn/1.0/model') },
      { 'networking.knative.dev/visibility': 'cluster-local' },
    ),
  ];
}

/** The example platform as one YAML stream, as `kfmesh example` prints it. */
export function examplePlatformYaml(): string {
  return toYaml(examplePlatform());
}
