/**
 * Serverless (Knative) mode: the top-level VirtualService and the ExternalName Service KServe's ingress
 * reconciler writes for an InferenceService (`reconcilers/ingress/ingress_reconciler.go`, `createIngress`).
 */
import {
  conditionStatus,
  ReadyCondition,
  type Component,
  type InferenceService,
} from '../model/inference-service.ts';
import type { KubeObject } from '../model/object.ts';
import type { KServeConfig } from './config.ts';
import {
  additionalHosts,
  explainPrefix,
  generateUrlPath,
  hostRegExp,
  pathBasedExplainSuffix,
  serviceHostname,
} from './hosts.ts';
import {
  childMeta,
  ClusterLocalVisibility,
  componentServiceName,
  entryComponent,
  withoutKeys,
} from './names.ts';
import { Label } from '../model/vocabulary.ts';

/** Istio's reserved gateway name for all sidecars. */
const MeshGateway = 'mesh';

/** Options of VirtualService generation. */
export interface VirtualServiceOptions {
  /** Bind internal hosts to `mesh` as KServe does since v0.14 (#3711); false renders KServe before that fix. */
  meshGateway: boolean;
}

/** Why no VirtualService was generated: the IngressReady condition KServe sets instead. */
export interface NotReady {
  status: 'False' | 'Unknown';
  reason: string;
}

/** The VirtualService KServe generates, or the reason it generates none yet. */
export type VirtualServiceResult = { virtualService: KubeObject } | { notReady: NotReady };

type Match = Record<string, unknown>;

/**
 * KServe's `getServiceHost`: the host of the entry component's Knative URL without the component suffix
 * (`my-model-predictor.test.example.com` → `my-model.test.example.com`); empty when not reported yet.
 */
export function knativeServiceHost(isvc: InferenceService): string {
  const component = entryComponent(isvc);
  const url = isvc.status?.components?.[component]?.url;
  if (!url) return '';
  const host = hostOf(url);
  const suffix = host.includes('-default') ? `-${component}-default` : `-${component}`;
  return host.replace(suffix, '');
}

/** The host of a URL string (empty when it has none). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** The readiness gates of `createIngress`, in KServe's order. */
function readinessGate(isvc: InferenceService): NotReady | undefined {
  const gates: [Component, boolean][] = [
    ['predictor', true],
    ['transformer', isvc.spec.transformer !== undefined],
    ['explainer', isvc.spec.explainer !== undefined],
  ];
  for (const [component, applies] of gates) {
    if (!applies) continue;
    const status = conditionStatus(isvc, ReadyCondition[component]);
    if (status !== 'True') return { status, reason: `${capitalize(component)} ingress not created` };
  }
  if (!knativeServiceHost(isvc)) {
    // KServe's Reconcile returns before creating anything until the component URL is reported.
    return { status: 'Unknown', reason: `${capitalize(entryComponent(isvc))} URL not reported yet` };
  }
  return undefined;
}

/** The top-level VirtualService of a Serverless InferenceService. */
export function virtualServiceFor(
  isvc: InferenceService,
  config: KServeConfig,
  options: VirtualServiceOptions,
): VirtualServiceResult {
  const notReady = readinessGate(isvc);
  if (notReady) return { notReady };
  const { ingress, clusterDomain } = config;
  const name = isvc.metadata.name ?? '';
  const namespace = isvc.metadata.namespace ?? '';
  const internalHost = serviceHostname(name, namespace, clusterDomain);
  const serviceHost = knativeServiceHost(isvc);
  const isInternal =
    isvc.metadata.labels?.[Label.KnativeVisibility] === ClusterLocalVisibility ||
    serviceHost === internalHost;
  const extraHosts = isInternal
    ? []
    : additionalHosts(config.domainList, serviceHost, ingress.additionalIngressDomains);
  const localGateways = options.meshGateway ? [ingress.localGateway, MeshGateway] : [ingress.localGateway];
  const destination = [
    { destination: { host: ingress.knativeLocalGatewayService, port: { number: 80 } }, weight: 100 },
  ];
  const headersFor = (component: Component): Record<string, unknown> => ({
    request: {
      set: {
        Host: serviceHostname(componentServiceName(isvc, component), namespace, clusterDomain),
        'KServe-Isvc-Name': name,
        'KServe-Isvc-Namespace': namespace,
      },
    },
  });

  const hostMatches = (uriRegex: string | undefined): Match[] => {
    const uri = uriRegex === undefined ? {} : { uri: { regex: uriRegex } };
    const matches: Match[] = [
      { ...uri, authority: { regex: hostRegExp(internalHost) }, gateways: localGateways },
    ];
    if (!isInternal) {
      // External matches differ only by host (same uri, same gateway): KServe's de-duplication reduces to the host.
      for (const host of new Set([serviceHost, ...extraHosts])) {
        matches.push({ ...uri, authority: { regex: hostRegExp(host) }, gateways: [ingress.ingressGateway] });
      }
    }
    return matches;
  };

  const http: Record<string, unknown>[] = [];
  if (isvc.spec.explainer)
    http.push({ match: hostMatches(explainPrefix), route: destination, headers: headersFor('explainer') });
  http.push({ match: hostMatches(undefined), route: destination, headers: headersFor(entryComponent(isvc)) });

  const hosts = [internalHost];
  const gateways = [...localGateways];
  if (!isInternal) {
    hosts.push(serviceHost);
    gateways.push(ingress.ingressGateway);
  }
  if (ingress.pathTemplate) {
    http.push(...pathBasedRoutes(isvc, ingress, ingress.pathTemplate, destination, headersFor));
    hosts.push(ingress.ingressDomain);
  }
  for (const host of extraHosts) if (!hosts.includes(host)) hosts.push(host);

  const labels = { ...(isvc.metadata.labels ?? {}) };
  const annotations = withoutKeys(isvc.metadata.annotations, config.serviceAnnotationDisallowedList);
  return {
    virtualService: {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: childMeta(isvc, name, labels, annotations),
      spec: { hosts, gateways, http },
    },
  };
}

/**
 * The routes of path-based routing (`pathTemplate`): on the ingress domain, the explainer's path (when
 * there is an explainer) and the model's path, each rewritten to the component's own paths.
 */
function pathBasedRoutes(
  isvc: InferenceService,
  ingress: KServeConfig['ingress'],
  pathTemplate: string,
  destination: unknown[],
  headersFor: (component: Component) => Record<string, unknown>,
): Record<string, unknown>[] {
  const name = isvc.metadata.name ?? '';
  const path = generateUrlPath(pathTemplate, name, isvc.metadata.namespace ?? '');
  const authority = { regex: hostRegExp(ingress.ingressDomain) };
  const onIngress = [ingress.ingressGateway];
  const http: Record<string, unknown>[] = [];
  if (isvc.spec.explainer) {
    const regex = path + pathBasedExplainSuffix;
    http.push({
      match: [{ uri: { regex }, authority, gateways: onIngress }],
      rewrite: { uriRegexRewrite: { match: regex, rewrite: '\\1' } },
      route: destination,
      headers: headersFor('explainer'),
    });
  }
  http.push({
    match: [
      { uri: { prefix: `${path}/` }, authority, gateways: onIngress },
      { uri: { exact: path }, authority, gateways: onIngress },
    ],
    rewrite: { uri: '/' },
    route: destination,
    headers: headersFor(entryComponent(isvc)),
  });
  return http;
}

/** The ExternalName Service that makes `<isvc>.<ns>.svc` resolve to the local gateway (`reconcileExternalService`). */
export function externalNameServiceFor(isvc: InferenceService, config: KServeConfig): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMeta(isvc, isvc.metadata.name ?? ''),
    spec: { externalName: config.ingress.localGatewayService, type: 'ExternalName', sessionAffinity: 'None' },
  };
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
