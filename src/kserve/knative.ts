/**
 * What Knative Serving writes for one component of a Serverless InferenceService once it is ready
 * (docs/semantics.md, Knative): the route's ExternalName Service to the local gateway, the revision's
 * Service and pods (queue-proxy in front of the model server), and net-istio's two VirtualServices: one
 * on the external and local gateways of `config-istio`, one on `mesh`. The gateways are read from
 * `config-istio` (`gateway.<ns>.<name>` and `local-gateway.<ns>.<name>` keys).
 */
import type { KubeObject } from '../model/object.ts';
import { dataOf } from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { Label, GroupKind } from '../model/vocabulary.ts';
import { configMapOf, type ConfigMapInput } from '../model/inputs.ts';

/**
 * Knative Serving's ConfigMaps kfmesh reads: its gateways (`config-istio`), its domains (`config-domain`,
 * read with KServe's settings) and its network settings (`config-network`, whose presence says Knative
 * Serving runs).
 */
export const KnativeConfigMaps = {
  istio: { name: 'config-istio', namespace: 'knative-serving', reader: "Knative's net-istio" },
  domain: { name: 'config-domain', namespace: 'knative-serving', reader: 'Knative Serving' },
  network: { name: 'config-network', namespace: 'knative-serving', reader: 'Knative Serving' },
} as const satisfies Record<string, ConfigMapInput>;

/** The gateways net-istio binds routes to (`ns/name`), and the local gateway's Service host. */
export interface KnativeGateways {
  external: string[];
  local: string[];
  localService: string;
}

/** Knative's shipped `config-istio`. */
const shipped: KnativeGateways = {
  external: ['knative-serving/knative-ingress-gateway'],
  local: ['knative-serving/knative-local-gateway'],
  localService: 'knative-local-gateway.istio-system.svc.cluster.local',
};

/** The gateways of `config-istio`, or Knative's shipped ones. */
export function knativeGatewaysFrom(snapshot: Snapshot): KnativeGateways {
  const config = configMapOf(KnativeConfigMaps.istio, snapshot.list(GroupKind.ConfigMap));
  if (!config) return shipped;
  const external: string[] = [];
  const local: string[] = [];
  let localService = shipped.localService;
  for (const [key, value] of Object.entries(dataOf(config)).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const m = /^(local-)?gateway\.([^.]+)\.([^.]+)$/.exec(key);
    if (!m) continue;
    (m[1] ? local : external).push(`${m[2]}/${m[3]}`);
    if (m[1] && typeof value === 'string') localService = value;
  }
  return {
    external: external.length > 0 ? external : shipped.external,
    local: local.length > 0 ? local : shipped.local,
    localService,
  };
}

/** One component's Knative Service, as KServe names it (`<isvc>-<component>`), and where it runs. */
export interface KnativeComponent {
  namespace: string;
  /** The Knative Service's name. */
  service: string;
  /** The InferenceService it serves, and the component. */
  inferenceService: string;
  component: string;
  /** The external domain (the route is cluster-local when undefined). */
  domain?: string;
  clusterDomain: string;
  /** The service account the revision's pods run as. */
  serviceAccount?: string;
}

/** The objects Knative Serving keeps for one ready component: first revision, all traffic to it. */
export function knativeComponentObjects(c: KnativeComponent, gateways: KnativeGateways): KubeObject[] {
  const { namespace: ns, service: ksvc } = c;
  const revision = `${ksvc}-00001`;
  const labels = {
    app: revision,
    component: c.component,
    [Label.KnativeConfiguration]: ksvc,
    [Label.KnativeRevision]: revision,
    [Label.KnativeService]: ksvc,
    [Label.InferenceService]: c.inferenceService,
  };
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: ksvc, namespace: ns, labels: { [Label.KnativeRoute]: ksvc } },
      spec: {
        type: 'ExternalName',
        externalName: gateways.localService,
        ports: [{ name: 'http2', port: 80, targetPort: 80 }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: revision, namespace: ns, labels },
      spec: {
        selector: { [Label.KnativeRevision]: revision },
        ports: [
          { name: 'http', port: 80, targetPort: 8012 },
          { name: 'https', port: 443, targetPort: 8112 },
        ],
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `${revision}-deployment`, namespace: ns, labels },
      spec: {
        selector: { matchLabels: { [Label.KnativeRevision]: revision } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: c.serviceAccount ?? 'default',
            containers: [
              { name: 'kserve-container', ports: [{ name: 'user-port', containerPort: 8080 }] },
              {
                name: 'queue-proxy',
                ports: [
                  { name: 'http-queueadm', containerPort: 8022 },
                  { name: 'queue-port', containerPort: 8012 },
                ],
              },
            ],
          },
        },
      },
    },
    ...knativeVirtualServices(c, gateways),
  ];
}

/** net-istio's VirtualServices for a component's route: on the external and local gateways, and on `mesh`. */
export function knativeVirtualServices(c: KnativeComponent, gateways: KnativeGateways): KubeObject[] {
  const { namespace: ns, service: ksvc } = c;
  const revision = `${ksvc}-00001`;
  const destination = {
    destination: { host: `${revision}.${ns}.svc.${c.clusterDomain}`, port: { number: 80 } },
    headers: { request: { set: { 'Knative-Serving-Namespace': ns, 'Knative-Serving-Revision': revision } } },
    weight: 100,
  };
  const internal = [`${ksvc}.${ns}`, `${ksvc}.${ns}.svc`, `${ksvc}.${ns}.svc.${c.clusterDomain}`];
  const external = c.domain === undefined ? [] : [`${ksvc}.${ns}.${c.domain}`];
  const routes: Record<string, unknown>[] = [
    {
      match: [{ authority: { prefix: `${ksvc}.${ns}` }, gateways: gateways.local }],
      retries: {},
      route: [destination],
    },
  ];
  for (const host of external)
    routes.push({
      match: [{ authority: { prefix: host }, gateways: gateways.external }],
      retries: {},
      route: [destination],
    });
  const labels = { [Label.KnativeIngress]: ksvc };
  return [
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name: `${ksvc}-ingress`, namespace: ns, labels },
      spec: {
        gateways: external.length > 0 ? [...gateways.external, ...gateways.local] : gateways.local,
        hosts: [...internal.slice(0, 1), ...external, ...internal.slice(1)],
        http: routes,
      },
    },
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name: `${ksvc}-mesh`, namespace: ns, labels },
      spec: {
        gateways: ['mesh'],
        hosts: internal,
        http: [
          {
            match: [{ authority: { prefix: `${ksvc}.${ns}` }, gateways: ['mesh'] }],
            retries: {},
            route: [destination],
          },
        ],
      },
    },
  ];
}
