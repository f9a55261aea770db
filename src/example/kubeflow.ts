/**
 * Kubeflow's mesh objects in sidecar mode, as the manifests ship them (docs/semantics.md, Kubeflow): the
 * gateways, the components with their Services, Deployments, VirtualServices, DestinationRules and
 * AuthorizationPolicies, the edge policies of `istio-system`, the Sidecar resources, and dex and
 * oauth2-proxy outside the mesh. Written as data; the functions below only give each row its objects.
 */
import { ProxyContainer } from '../model/sidecar.ts';
import type { JsonRecord } from '../model/object.ts';
import type { KubeObject } from '../model/object.ts';
import { Label } from '../model/vocabulary.ts';

/** The Istio ingress gateway's identity, which most component policies admit. */
const ingressPrincipal = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';
const kfpPrincipals = [
  'ml-pipeline',
  'ml-pipeline-ui',
  'ml-pipeline-persistenceagent',
  'ml-pipeline-scheduledworkflow',
  'ml-pipeline-viewer-crd-service-account',
  'kubeflow-pipelines-cache',
].map((sa) => `cluster.local/ns/kubeflow/sa/${sa}`);
const fromIngress = [{ from: [{ source: { principals: [ingressPrincipal] } }] }];

/** One component: its pods, Service, route through the Kubeflow gateway, and policy. */
interface Component {
  name: string;
  namespace?: string;
  /** The Service's name when it differs from the Deployment's. */
  service?: string;
  labels: Record<string, string>;
  serviceAccount: string;
  ports: { name: string; port: number; targetPort: number }[];
  /** The pod's `sidecar.istio.io/inject` label, when the manifests set one. */
  inject?: 'true' | 'false';
  route?: {
    name: string;
    prefix: string;
    rewrite?: string;
    forwardedPrefix?: string;
    timeout?: string;
    gateway?: string;
  };
  /** A DestinationRule with ISTIO_MUTUAL for the Service. */
  mutualTls?: boolean;
  policy?: { name: string; rules: JsonRecord[] };
}

const components: Component[] = [
  {
    name: 'centraldashboard',
    labels: { app: 'centraldashboard' },
    serviceAccount: 'centraldashboard',
    ports: [{ name: 'http', port: 80, targetPort: 8082 }],
    inject: 'true',
    route: { name: 'centraldashboard', prefix: '/', rewrite: '/' },
    policy: { name: 'central-dashboard', rules: fromIngress },
  },
  {
    name: 'jupyter-web-app-deployment',
    service: 'jupyter-web-app-service',
    labels: { app: 'jupyter-web-app' },
    serviceAccount: 'jupyter-web-app-service-account',
    ports: [{ name: 'http', port: 80, targetPort: 5000 }],
    route: {
      name: 'jupyter-web-app-jupyter-web-app',
      prefix: '/jupyter/',
      rewrite: '/',
      forwardedPrefix: '/jupyter',
    },
    mutualTls: true,
    policy: { name: 'jupyter-web-app', rules: fromIngress },
  },
  {
    name: 'volumes-web-app-deployment',
    service: 'volumes-web-app-service',
    labels: { app: 'volumes-web-app' },
    serviceAccount: 'volumes-web-app-service-account',
    ports: [{ name: 'http', port: 80, targetPort: 5000 }],
    route: {
      name: 'volumes-web-app-volumes-web-app',
      prefix: '/volumes/',
      rewrite: '/',
      forwardedPrefix: '/volumes',
    },
    mutualTls: true,
    policy: { name: 'volumes-web-app', rules: fromIngress },
  },
  {
    name: 'tensorboards-web-app-deployment',
    service: 'tensorboards-web-app-service',
    labels: { app: 'tensorboards-web-app' },
    serviceAccount: 'tensorboards-web-app-service-account',
    ports: [{ name: 'http', port: 80, targetPort: 5000 }],
    route: {
      name: 'tensorboards-web-app-tensorboards-web-app',
      prefix: '/tensorboards/',
      rewrite: '/',
      forwardedPrefix: '/tensorboards',
    },
    mutualTls: true,
    policy: { name: 'tensorboards-web-app', rules: fromIngress },
  },
  {
    name: 'katib-ui',
    labels: { [Label.KatibComponent]: 'ui' },
    serviceAccount: 'katib-ui',
    ports: [{ name: 'ui', port: 80, targetPort: 8080 }],
    inject: 'true',
    route: { name: 'katib-ui', prefix: '/katib/', rewrite: '/katib/' },
    policy: { name: 'katib-ui', rules: fromIngress },
  },
  {
    name: 'ml-pipeline-ui',
    labels: { app: 'ml-pipeline-ui' },
    serviceAccount: 'ml-pipeline-ui',
    ports: [{ name: 'http', port: 80, targetPort: 3000 }],
    route: { name: 'ml-pipeline-ui', prefix: '/pipeline', rewrite: '/pipeline', timeout: '300s' },
    mutualTls: true,
    policy: {
      name: 'ml-pipeline-ui',
      rules: [
        ...fromIngress,
        {
          when: [
            { key: 'request.headers[authorization]', values: ['*'] },
            { key: 'request.headers[kubeflow-userid]', notValues: ['*'] },
          ],
        },
      ],
    },
  },
  {
    name: 'ml-pipeline',
    labels: { app: 'ml-pipeline' },
    serviceAccount: 'ml-pipeline',
    ports: [
      { name: 'http', port: 8888, targetPort: 8888 },
      { name: 'grpc', port: 8887, targetPort: 8887 },
    ],
    policy: {
      name: 'ml-pipeline',
      rules: [
        { from: [{ source: { principals: kfpPrincipals } }] },
        { when: [{ key: 'request.headers[kubeflow-userid]', notValues: ['*'] }] },
      ],
    },
  },
  {
    name: 'metadata-envoy-deployment',
    service: 'metadata-envoy-service',
    labels: { component: 'metadata-envoy' },
    serviceAccount: 'default',
    ports: [{ name: 'md-envoy', port: 9090, targetPort: 9090 }],
    inject: 'false',
    route: { name: 'metadata-grpc', prefix: '/ml_metadata', rewrite: '/ml_metadata' },
  },
  {
    name: 'metadata-grpc-deployment',
    service: 'metadata-grpc-service',
    labels: { component: 'metadata-grpc-server' },
    serviceAccount: 'metadata-grpc-server',
    ports: [{ name: 'grpc-api', port: 8080, targetPort: 8080 }],
    policy: { name: 'metadata-grpc-service', rules: [{}] },
  },
  {
    name: 'profiles-deployment',
    service: 'profiles-kfam',
    labels: { 'kustomize.component': 'profiles' },
    serviceAccount: 'profiles-controller-service-account',
    ports: [{ name: 'http', port: 8081, targetPort: 8081 }],
    inject: 'true',
    route: { name: 'profiles-kfam', prefix: '/kfam/', rewrite: '/kfam/', forwardedPrefix: '/kfam' },
    policy: {
      name: 'profiles-kfam',
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/kubeflow/sa/centraldashboard'] } }] }],
    },
  },
  {
    name: 'kserve-models-web-app',
    service: 'kserve-models-web-application',
    labels: {
      app: 'kserve',
      [Label.AppComponent]: 'kserve-models-web-application',
      [Label.AppName]: 'kserve',
      'kustomize.component': 'kserve-models-web-application',
    },
    serviceAccount: 'kserve-models-web-app',
    ports: [{ name: 'http', port: 80, targetPort: 5000 }],
    inject: 'true',
    route: {
      name: 'kserve-models-web-application',
      prefix: '/kserve-endpoints/',
      rewrite: '/',
      gateway: 'kubeflow/kubeflow-gateway',
    },
    policy: { name: 'kserve-models-web-application', rules: fromIngress },
  },
  {
    name: 'notebook-controller-deployment',
    labels: { app: 'notebook-controller' },
    serviceAccount: 'notebook-controller-service-account',
    ports: [],
  },
  {
    name: 'dex',
    namespace: 'auth',
    labels: { app: 'dex' },
    serviceAccount: 'dex',
    ports: [{ name: 'dex', port: 5556, targetPort: 5556 }],
    route: { name: 'dex', prefix: '/dex/', gateway: 'kubeflow/kubeflow-gateway' },
  },
  {
    name: 'oauth2-proxy',
    namespace: 'oauth2-proxy',
    labels: { [Label.AppName]: 'oauth2-proxy' },
    serviceAccount: 'oauth2-proxy',
    ports: [{ name: 'http', port: 80, targetPort: 4180 }],
    route: { name: 'oauth2-proxy', prefix: '/oauth2/', gateway: 'kubeflow/kubeflow-gateway' },
  },
];

/** The objects of one component. */
function componentObjects(c: Component): KubeObject[] {
  const ns = c.namespace ?? 'kubeflow';
  const service = c.service ?? c.name;
  const host = `${service}.${ns}.svc.cluster.local`;
  const podLabels = { ...c.labels, ...(c.inject ? { [Label.SidecarInject]: c.inject } : {}) };
  const out: KubeObject[] = [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: c.name, namespace: ns, labels: { ...c.labels } },
      spec: {
        selector: { matchLabels: { ...c.labels } },
        template: {
          metadata: { labels: podLabels },
          spec: {
            serviceAccountName: c.serviceAccount,
            containers: [
              {
                name: c.name,
                image: placeholderImage(c.name),
                ports: c.ports.map((p) => ({ name: p.name, containerPort: p.targetPort })),
              },
            ],
          },
        },
      },
    },
  ];
  if (c.ports.length > 0)
    out.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: service, namespace: ns, labels: { ...c.labels } },
      spec: {
        selector: { ...c.labels },
        ports: c.ports.map((p) => ({
          name: p.name,
          port: p.port,
          targetPort: p.targetPort,
          protocol: 'TCP',
        })),
      },
    });
  const route = c.route;
  if (route) {
    const http: JsonRecord = {
      match: [{ uri: { prefix: route.prefix } }],
      ...(route.rewrite ? { rewrite: { uri: route.rewrite } } : {}),
      ...(route.forwardedPrefix
        ? { headers: { request: { add: { 'x-forwarded-prefix': route.forwardedPrefix } } } }
        : {}),
      route: [{ destination: { host, port: { number: c.ports[0]?.port ?? 80 } } }],
      ...(route.timeout ? { timeout: route.timeout } : {}),
    };
    out.push({
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name: route.name, namespace: ns },
      spec: { gateways: [route.gateway ?? 'kubeflow-gateway'], hosts: ['*'], http: [http] },
    });
  }
  if (c.mutualTls)
    out.push({
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'DestinationRule',
      metadata: { name: service, namespace: ns },
      spec: { host, trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } },
    });
  if (c.policy)
    out.push({
      apiVersion: 'security.istio.io/v1beta1',
      kind: 'AuthorizationPolicy',
      metadata: { name: c.policy.name, namespace: ns },
      spec: { action: 'ALLOW', selector: { matchLabels: { ...c.labels } }, rules: c.policy.rules },
    });
  return out;
}

const ingressLabels = { app: 'istio-ingressgateway', istio: 'ingressgateway' };
const localLabels = { app: 'cluster-local-gateway', istio: 'cluster-local-gateway' };
const edgeNotPaths = ['/dex/*', '/dex/**', '/oauth2/*'];

function policy(
  name: string,
  namespace: string,
  spec: JsonRecord,
  apiVersion = 'security.istio.io/v1beta1',
): KubeObject {
  return { apiVersion, kind: 'AuthorizationPolicy', metadata: { name, namespace }, spec };
}

function gateway(name: string, namespace: string, selector: Record<string, string>, port = 80): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'Gateway',
    metadata: { name, namespace },
    spec: { selector, servers: [{ port: { number: port, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
  };
}

/** The gateways, edge policies and mesh-wide objects of `istio-system` and the Kubeflow gateway. */
// Why long: it is an object list, one constructor call per object as Kubeflow's manifests have them.
function edge(): KubeObject[] {
  return [
    gateway('istio-ingressgateway', 'istio-system', ingressLabels),
    gateway('kubeflow-gateway', 'kubeflow', { istio: 'ingressgateway' }),
    gateway('cluster-local-gateway', 'istio-system', localLabels),
    policy('global-deny-all', 'istio-system', {}),
    policy('istio-ingressgateway', 'istio-system', {
      action: 'ALLOW',
      selector: { matchLabels: ingressLabels },
      rules: [{}],
    }),
    policy('istio-ingressgateway-oauth2-proxy', 'istio-system', {
      action: 'CUSTOM',
      provider: { name: 'oauth2-proxy' },
      selector: { matchLabels: { app: 'istio-ingressgateway' } },
      rules: [
        {
          to: [{ operation: { notPaths: edgeNotPaths } }],
          when: [{ key: 'request.headers[authorization]', notValues: ['*'] }],
        },
      ],
    }),
    policy('istio-ingressgateway-require-jwt', 'istio-system', {
      action: 'DENY',
      selector: { matchLabels: { app: 'istio-ingressgateway' } },
      rules: [
        {
          from: [{ source: { notRequestPrincipals: ['*'] } }],
          to: [{ operation: { notPaths: edgeNotPaths } }],
        },
      ],
    }),
    policy(
      'cluster-local-gateway',
      'istio-system',
      { action: 'ALLOW', selector: { matchLabels: localLabels }, rules: [{}] },
      'security.istio.io/v1',
    ),
    {
      apiVersion: 'security.istio.io/v1beta1',
      kind: 'RequestAuthentication',
      metadata: { name: 'dex-jwt', namespace: 'istio-system' },
      spec: {
        selector: { matchLabels: { app: 'istio-ingressgateway' } },
        jwtRules: [
          {
            issuer: 'http://dex.auth.svc.cluster.local:5556/dex',
            forwardOriginalToken: true,
            outputClaimToHeaders: [
              { header: 'kubeflow-userid', claim: 'email' },
              { header: 'kubeflow-groups', claim: 'groups' },
            ],
            fromHeaders: [{ name: 'Authorization', prefix: 'Bearer ' }],
          },
        ],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'Sidecar',
      metadata: { name: 'default', namespace: 'istio-system' },
      spec: {
        egress: [
          {
            hosts: [
              './*',
              'kubeflow/*',
              'kubeflow-system/*',
              'knative-serving/*',
              'knative-eventing/*',
              'istio-system/*',
            ],
          },
        ],
      },
    },
    ...['notebook-controller', 'ml-pipeline-ui'].map((app): KubeObject => ({
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'Sidecar',
      metadata: { name: `${app}-exception`, namespace: 'kubeflow' },
      spec: { workloadSelector: { labels: { app } }, egress: [{ hosts: ['*/*'] }] },
    })),
  ];
}

/** An Istio gateway Deployment in istio-system: the proxy as a router, never injected. */
export function gatewayDeployment(
  name: string,
  labels: Record<string, string>,
  serviceAccount: string,
  image = 'docker.io/istio/proxyv2:1.29.1',
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'istio-system', labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels: { ...labels, [Label.SidecarInject]: 'false' } },
        spec: {
          serviceAccountName: serviceAccount,
          containers: [{ name: ProxyContainer, image, args: ['proxy', 'router'] }],
        },
      },
    },
  };
}

/** The cluster-local gateway Kubeflow runs for in-cluster calls through Knative (its own pods and identity). */
function clusterLocalGateway(): KubeObject[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'cluster-local-gateway', namespace: 'istio-system', labels: localLabels },
      spec: {
        selector: localLabels,
        ports: [
          { name: 'status-port', port: 15020, targetPort: 15020 },
          { name: 'http2', port: 80, targetPort: 8080 },
        ],
      },
    },
    gatewayDeployment('cluster-local-gateway', localLabels, 'cluster-local-gateway-service-account'),
  ];
}

/** Kubeflow's mesh objects in sidecar mode (the components, gateways, edge policies, Sidecar resources). */
export function kubeflowSidecarObjects(): KubeObject[] {
  return [...edge(), ...clusterLocalGateway(), ...components.flatMap(componentObjects)];
}

/** The selector labels of the cluster-local gateway pods (Knative's local gateway is re-pointed at them). */
export const clusterLocalGatewayLabels = localLabels;

/**
 * An image for a container kfmesh never looks into: the example's objects must pass a real API server's
 * validation, which requires one.
 */
export function placeholderImage(name: string): string {
  return `registry.example.com/kubeflow/${name}:example`;
}
