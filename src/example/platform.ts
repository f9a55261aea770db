/**
 * The built-in example platform: Kubeflow with KServe on Knative over Istio in sidecar mode, as a running
 * cluster holds it. Kubeflow's components, gateways and edge policies as the manifests ship them
 * (./kubeflow.ts), the configuration KServe, Knative and Istio install (values as Kubeflow sets them),
 * two Profiles with the owner policy the profile controller writes, four InferenceServices in two user
 * namespaces with the policies that admit callers to them, the objects KServe created for them (the same
 * function `kfmesh render` uses), Knative's per-component route Services, revision Services, Endpoints and
 * net-istio VirtualServices, and running pods with sidecars, including an in-mesh client.
 */
import type { KubeObject } from '../model/object.ts';
import { toYaml } from '../load/serialize.ts';
import { Snapshot } from '../load/snapshot.ts';
import { desiredState } from '../render/desired-state.ts';
import { migrateToAmbient } from '../ambient/migrate.ts';
import {
  clusterLocalGatewayLabels,
  gatewayDeployment,
  kubeflowSidecarObjects,
  placeholderImage,
} from './kubeflow.ts';
import { Annotation, IstioIngressController, Label } from '../model/vocabulary.ts';
import { runningPod } from './pods.ts';
import { notebookServerObjects } from '../kubeflow/notebook.ts';
import { knativeVirtualServices } from '../kserve/knative.ts';

const domain = 'example.com';
const userNs = 'kubeflow-user-example-com';
const teamNs = 'ml-team';
const researchNs = 'ml-research';
const ingressGateway = 'kubeflow/kubeflow-gateway';
const localGateway = 'knative-serving/knative-local-gateway';
const localGatewayHost = 'knative-local-gateway.istio-system.svc.cluster.local';

function namespace(name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { [Label.MetadataName]: name, ...labels } },
  };
}

/** An InferenceService served by Knative, as KServe reports it once every component is ready. */
interface ExampleModel {
  name: string;
  namespace: string;
  spec: Record<string, unknown>;
  clusterLocal?: boolean;
}

const models: ExampleModel[] = [
  {
    name: 'sklearn-iris',
    namespace: userNs,
    spec: {
      predictor: {
        model: {
          modelFormat: { name: 'sklearn' },
          storageUri: 'gs://kfserving-examples/models/sklearn/1.0/model',
        },
      },
    },
  },
  {
    name: 'sentiment',
    namespace: teamNs,
    spec: {
      predictor: {
        model: {
          modelFormat: { name: 'huggingface' },
          storageUri: 'hf://distilbert/distilbert-base-uncased-finetuned-sst-2-english',
        },
      },
      transformer: { containers: [{ name: 'kserve-container', image: 'kserve/image-transformer:latest' }] },
    },
  },
  {
    name: 'income',
    namespace: teamNs,
    spec: {
      predictor: {
        model: {
          modelFormat: { name: 'sklearn' },
          storageUri: 'gs://kfserving-examples/models/sklearn/1.0/income/model',
        },
      },
      explainer: { art: { type: 'SquareAttack', config: { nb_classes: '10' } } },
    },
  },
  {
    name: 'fraud-scorer',
    namespace: teamNs,
    clusterLocal: true,
    spec: {
      predictor: {
        model: {
          modelFormat: { name: 'sklearn' },
          storageUri: 'gs://kfserving-examples/models/sklearn/1.0/model',
        },
      },
    },
  },
];

function componentsOf(model: ExampleModel): string[] {
  return Object.keys(model.spec).filter((c) => ['predictor', 'transformer', 'explainer'].includes(c));
}

function inferenceService(model: ExampleModel): KubeObject {
  const { name, namespace: ns } = model;
  const components = componentsOf(model);
  const statusComponents: Record<string, unknown> = {};
  for (const c of components) {
    const host = model.clusterLocal ? `${name}-${c}.${ns}.svc.cluster.local` : `${name}-${c}.${ns}.${domain}`;
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
      labels: model.clusterLocal ? { [Label.KnativeVisibility]: 'cluster-local' } : {},
      annotations: { [Annotation.DeploymentMode]: 'Serverless' },
    },
    spec: model.spec,
    status: {
      conditions: [
        ...components.map((c) => ready(`${c.charAt(0).toUpperCase()}${c.slice(1)}Ready`)),
        ready('Ready'),
      ],
      components: statusComponents,
    },
  };
}

/** What Knative (net-istio) runs for one component: route Service, revision Service and Endpoints, pod, VirtualServices. */
// Why long: it is a list of object literals, written out as Knative writes them so they can be compared.
function knativeComponent(model: ExampleModel, component: string, index: number): KubeObject[] {
  const ns = model.namespace;
  const ksvc = `${model.name}-${component}`;
  const revision = `${ksvc}-00001`;
  const podIp = `10.244.2.${20 + index}`;
  const labels = {
    app: revision,
    component,
    [Label.KnativeConfiguration]: ksvc,
    [Label.KnativeRevision]: revision,
    [Label.KnativeService]: ksvc,
    [Label.InferenceService]: model.name,
    [Label.CanonicalName]: ksvc,
    [Label.CanonicalRevision]: revision,
  };
  const pod = runningPod(ns, `${revision}-deployment`, podIp, labels, {
    containers: [
      {
        name: 'kserve-container',
        image: 'kserve/sklearnserver:v0.14.0',
        ports: [{ name: 'user-port', containerPort: 8080 }],
      },
      {
        name: 'queue-proxy',
        image: 'gcr.io/knative-releases/knative.dev/serving/cmd/queue:v1.14.1',
        ports: [
          { name: 'http-queueadm', containerPort: 8022 },
          { name: 'queue-port', containerPort: 8012 },
        ],
      },
    ],
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: ksvc,
        namespace: ns,
        labels: { [Label.KnativeRoute]: ksvc, [Label.InferenceService]: model.name },
      },
      spec: {
        type: 'ExternalName',
        externalName: localGatewayHost,
        ports: [{ name: 'http2', port: 80, targetPort: 80 }],
        sessionAffinity: 'None',
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: revision, namespace: ns, labels },
      spec: {
        clusterIP: `10.96.77.${31 + index}`,
        ports: [
          { name: 'http', port: 80, targetPort: 8012 },
          { name: 'https', port: 443, targetPort: 8112 },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: revision, namespace: ns },
      subsets: [
        {
          addresses: [{ ip: podIp, targetRef: { kind: 'Pod', namespace: ns, name: pod.metadata.name } }],
          ports: [
            { name: 'http', port: 8012 },
            { name: 'https', port: 8112 },
          ],
        },
      ],
    },
    pod,
    ...knativeVirtualServices(
      {
        namespace: ns,
        service: ksvc,
        inferenceService: model.name,
        component,
        ...(model.clusterLocal ? {} : { domain }),
        clusterDomain: 'cluster.local',
      },
      { external: [ingressGateway], local: [localGateway], localService: localGatewayHost },
    ),
  ];
}

/** Istio, Knative and KServe as installed, before any InferenceService exists. */
// Why long: it is the installation's object list, one literal or constructor call per object.
function installation(): KubeObject[] {
  const gatewayLabels = { app: 'istio-ingressgateway', istio: 'ingressgateway' };
  return [
    namespace('istio-system', { [Label.IstioInjection]: 'disabled' }),
    namespace('kubeflow', { [Label.IstioInjection]: 'enabled', 'control-plane': 'kubeflow' }),
    namespace('auth'),
    namespace('oauth2-proxy'),
    namespace('knative-serving', { [Label.IstioInjection]: 'enabled' }),
    namespace(userNs, { [Label.IstioInjection]: 'enabled', [Label.AppPartOf]: 'kubeflow-profile' }),
    namespace(teamNs, { [Label.IstioInjection]: 'enabled' }),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: {
        mesh: [
          'rootNamespace: istio-system',
          'trustDomain: cluster.local',
          'enableAutoMtls: true',
          'outboundTrafficPolicy:',
          '  mode: ALLOW_ANY',
          'extensionProviders:',
          '- name: oauth2-proxy',
          '  envoyExtAuthzHttp:',
          '    service: oauth2-proxy.oauth2-proxy.svc.cluster.local',
          '    port: 80',
          '    includeRequestHeadersInCheck: [authorization, cookie]',
          '    headersToUpstreamOnAllow: [authorization, path, x-auth-request-email, x-auth-request-groups, x-auth-request-user]',
          '    headersToDownstreamOnDeny: [content-type, set-cookie]',
          '',
        ].join('\n'),
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'inferenceservice-config', namespace: 'kubeflow' },
      data: {
        deploy: '{"defaultDeploymentMode": "Serverless"}',
        ingress: JSON.stringify(
          {
            enableGatewayApi: false,
            kserveIngressGateway: 'kserve/kserve-ingress-gateway',
            ingressGateway: ingressGateway,
            localGateway: localGateway,
            localGatewayService: localGatewayHost,
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
    // The IngressClass KServe's RawDeployment install creates: without it istiod ignores the Ingresses KServe
    // writes (docs/semantics.md, Kubernetes Ingress).
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'istio' },
      spec: { controller: IstioIngressController },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'config-domain', namespace: 'knative-serving' },
      data: { [domain]: '' },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'config-istio', namespace: 'knative-serving' },
      data: { 'gateway.kubeflow.kubeflow-gateway': 'istio-ingressgateway.istio-system.svc.cluster.local' },
    },
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'Gateway',
      metadata: { name: 'knative-local-gateway', namespace: 'knative-serving' },
      spec: {
        selector: clusterLocalGatewayLabels,
        servers: [{ port: { number: 8081, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'istio-ingressgateway', namespace: 'istio-system', labels: gatewayLabels },
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.180.44',
        selector: gatewayLabels,
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
          [Annotation.KnativeIngressProvider]: 'istio',
          [Label.DisableGatewayPortTranslation]: 'true',
        },
      },
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.45.12',
        selector: clusterLocalGatewayLabels,
        ports: [{ name: 'http2', port: 80, targetPort: 8081 }],
      },
    },
    gatewayDeployment(
      'istio-ingressgateway',
      gatewayLabels,
      'istio-ingressgateway-service-account',
      'docker.io/istio/proxyv2:1.29.1',
    ),
    runningPod(
      'istio-system',
      'istio-ingressgateway',
      '10.244.1.10',
      { ...gatewayLabels, [Label.CanonicalName]: 'istio-ingressgateway' },
      {
        serviceAccount: 'istio-ingressgateway-service-account',
        proxy: 'gateway',
        containers: [],
      },
    ),
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
    runningPod(
      userNs,
      'curl-inside-mesh',
      '10.244.1.31',
      { app: 'curl-inside-mesh' },
      { serviceAccount: 'default-editor', containers: [{ name: 'curl', image: 'curlimages/curl:8.10.1' }] },
    ),
  ];
}

/** A Deployment (and a Service when it serves a port) of a workload in a user namespace. */
function workload(
  ns: string,
  name: string,
  labels: Record<string, string>,
  serviceAccount: string,
  port?: { name: string; port: number; targetPort: number },
): KubeObject[] {
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: serviceAccount,
          containers: [
            {
              name: 'main',
              image: placeholderImage(name),
              ...(port ? { ports: [{ containerPort: port.targetPort }] } : {}),
            },
          ],
        },
      },
    },
  };
  if (!port) return [deployment];
  return [
    deployment,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns, labels },
      spec: { selector: labels, ports: [{ ...port, protocol: 'TCP' }] },
    },
  ];
}

/**
 * Two Kubeflow Profiles with a notebook each, running (the notebook controller's StatefulSet and Service);
 * in `ml-research` also a pipeline step and a RawDeployment InferenceService with the predictor KServe
 * runs for it, so the namespace can move to ambient mode (Serverless models keep the other in sidecar mode).
 */
function profiles(): KubeObject[] {
  const profile = (name: string, owner: string): KubeObject => ({
    apiVersion: 'kubeflow.org/v1',
    kind: 'Profile',
    metadata: { name },
    spec: { owner: { kind: 'User', name: owner } },
  });
  const notebook = (ns: string, name: string, annotations: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'kubeflow.org/v1',
    kind: 'Notebook',
    metadata: { name, namespace: ns, labels: { app: name }, annotations },
    spec: {
      template: {
        spec: {
          containers: [{ name, image: 'ghcr.io/kubeflow/kubeflow/notebook-servers/jupyter-scipy:v1.10.0' }],
        },
      },
    },
  });
  return [
    namespace(researchNs, { [Label.IstioInjection]: 'enabled', [Label.AppPartOf]: 'kubeflow-profile' }),
    ...notebookServerObjects(userNs, 'my-notebook'),
    ...notebookServerObjects(researchNs, 'lab'),
    ...workload(researchNs, 'pipeline-step', { app: 'pipeline-step' }, 'default-editor'),
    ...workload(
      researchNs,
      'iris-raw-predictor',
      {
        app: 'isvc.iris-raw-predictor',
        [Label.InferenceService]: 'iris-raw',
        component: 'predictor',
      },
      'default',
      { name: 'http', port: 80, targetPort: 8080 },
    ),
    profile(userNs, 'user@example.com'),
    profile(researchNs, 'researcher@example.com'),
    notebook(userNs, 'my-notebook'),
    notebook(researchNs, 'lab', {
      [Annotation.NotebookRewriteUri]: '/',
      [Annotation.NotebookHeadersRequestSet]: `{"X-RStudio-Root-Path":"/notebook/${researchNs}/lab/"}`,
    }),
    {
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: {
        name: 'iris-raw',
        namespace: researchNs,
        annotations: { [Annotation.DeploymentMode]: 'RawDeployment' },
      },
      spec: {
        predictor: {
          model: {
            modelFormat: { name: 'sklearn' },
            storageUri: 'gs://kfserving-examples/models/sklearn/1.0/model',
          },
        },
      },
      status: {
        conditions: [
          { type: 'PredictorReady', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
        components: { predictor: { url: `http://iris-raw-predictor-${researchNs}.${domain}` } },
      },
    },
  ];
}

/**
 * The policy that admits callers to a model's pods. Kubeflow denies everything by default
 * (`global-deny-all`); its own tests admit callers to a model this way, and so must every user.
 */
function modelPolicy(model: ExampleModel): KubeObject {
  return {
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: `allow-isvc-${model.name}`, namespace: model.namespace },
    spec: {
      action: 'ALLOW',
      selector: { matchLabels: { [Label.InferenceService]: model.name } },
      rules: [{}],
    },
  };
}

/** The objects of the example platform, in sidecar mode. */
export function examplePlatform(): KubeObject[] {
  const base = [
    ...installation(),
    ...kubeflowSidecarObjects(),
    ...models.map(inferenceService),
    ...models.map(modelPolicy),
    ...profiles(),
  ];
  // What KServe created for the InferenceServices, and the profile controller for the sidecar-mode
  // Profiles, is what kfmesh renders for them.
  const rendered = desiredState(Snapshot.of(base), { mode: 'sidecar' });
  const kserveObjects = [
    ...[...rendered.inferenceServices.values()].flatMap((r) => r.objects),
    ...rendered.objects.filter(
      (o) =>
        (o.kind === 'AuthorizationPolicy' ||
          (o.kind === 'VirtualService' && o.metadata.name?.startsWith('notebook-'))) &&
        rendered.modes.get(o.metadata.namespace ?? '') === 'sidecar',
    ),
  ];
  let index = 0;
  const knative = models.flatMap((model) =>
    componentsOf(model).flatMap((component) => knativeComponent(model, component, index++)),
  );
  return [...base, ...kserveObjects, ...knative];
}

/**
 * The example platform in ambient mode: `kfmesh migrate --to ambient` applied to the sidecar-mode platform
 * (namespaces that run Knative stay in sidecar mode, as migrate keeps them).
 */
export function exampleAmbientPlatform(): KubeObject[] {
  return migrateToAmbient(Snapshot.of(examplePlatform(), '<example>')).objects;
}

/** The example platform as one YAML stream, as `kfmesh example [--mode]` prints it. */
export function examplePlatformYaml(mode: 'sidecar' | 'ambient' = 'sidecar'): string {
  return toYaml(mode === 'ambient' ? exampleAmbientPlatform() : examplePlatform());
}

/**
 * The Istio version the README's walkthrough simulates: before 1.21 a model's ExternalName Service is
 * outside the mesh, so a sidecar with no route of its own for the model's host sends the request out
 * through PassthroughCluster (docs/semantics.md, ExternalName Services).
 */
export const ExampleIstioVersion = '1.20';

/**
 * The README's walkthrough as documents to load (simulated with Istio `ExampleIstioVersion`): the example
 * platform, then the VirtualServices KServe before 0.14 renders for it (bound only to gateways: `kfmesh
 * render --no-mesh-gateway`), which replace the example's. A sidecar client calling a model then leaves the mesh through PassthroughCluster (KFM101), as
 * examples/metrics/example.prom reports. `npm start` serves it.
 */
export function exampleBeforeKserve014(): { name: string; text: string }[] {
  const platform = examplePlatform();
  const before = desiredState(Snapshot.of(platform, '<example>'), { mode: 'sidecar', meshGateway: false });
  return [
    { name: '<example>', text: toYaml(platform) },
    { name: '<example: KServe before 0.14>', text: toYaml(before.objects) },
  ];
}
