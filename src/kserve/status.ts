/**
 * The `status.url`, `status.address.url` and `IngressReady` condition KServe's ingress reconcilers set,
 * as a pure function the controller reports and `render` checks against.
 */
import { specIfKind } from '../model/specs.ts';
import type { InferenceService } from '../model/inference-service.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { isKnativeMode, type DeploymentMode, type KServeConfig } from './config.ts';
import { generateDomainName, generateUrlPath, serviceHostname } from './hosts.ts';
import { templateValues } from './http-route.ts';
import { componentServiceName, entryComponent, isStopped } from './names.ts';
import { hostOf, knativeServiceHost } from './virtual-service.ts';
import { AppProtocol, GroupKind } from '../model/vocabulary.ts';

/** The networking part of an InferenceService's status. */
export interface IngressStatus {
  url?: string;
  addressUrl?: string;
  ingressReady: { status: 'True' | 'False' | 'Unknown'; reason?: string };
}

/** The status KServe would report for this InferenceService's networking. */
export function ingressStatusFor(
  isvc: InferenceService,
  mode: DeploymentMode,
  config: KServeConfig,
  snapshot: Snapshot,
): IngressStatus {
  if (isStopped(isvc)) return { ingressReady: { status: 'False', reason: 'Stopped' } };
  return isKnativeMode(mode) ? knativeStatus(isvc, config) : rawStatus(isvc, config, snapshot);
}

function knativeStatus(isvc: InferenceService, config: KServeConfig): IngressStatus {
  const { ingress, clusterDomain } = config;
  const name = isvc.metadata.name ?? '';
  const namespace = isvc.metadata.namespace ?? '';
  const entry = entryComponent(isvc);
  const componentUrl = isvc.status?.components?.[entry]?.url;
  if (!componentUrl || !knativeServiceHost(isvc))
    return { ingressReady: { status: 'Unknown', reason: `${entry} URL not reported yet` } };
  let url: string;
  let addressHost: string;
  if (ingress.disableIstioVirtualHost) {
    url = `${ingress.urlScheme}://${hostOf(componentUrl)}${pathOf(componentUrl)}`;
    addressHost = serviceHostname(componentServiceName(isvc, entry), namespace, clusterDomain);
  } else {
    url = ingress.pathTemplate
      ? `${ingress.urlScheme}://${ingress.ingressDomain}${generateUrlPath(ingress.pathTemplate, name, namespace)}`
      : `${ingress.urlScheme}://${knativeServiceHost(isvc)}${pathOf(componentUrl)}`;
    addressHost = serviceHostname(name, namespace, clusterDomain);
  }
  return { url, addressUrl: `http://${addressHost}`, ingressReady: { status: 'True' } };
}

function rawStatus(isvc: InferenceService, config: KServeConfig, snapshot: Snapshot): IngressStatus {
  const name = isvc.metadata.name ?? '';
  const namespace = isvc.metadata.namespace ?? '';
  const url = `${config.ingress.urlScheme}://${generateDomainName(config.ingress.domainTemplate, templateValues(isvc, name, config))}`;
  const entryService = componentServiceName(isvc, entryComponent(isvc));
  let host = serviceHostname(entryService, namespace, config.clusterDomain);
  const service = snapshot.get(GroupKind.Service, namespace, entryService);
  const spec = specIfKind(service, '/Service');
  if (spec.clusterIP === 'None') {
    // A headless Service has no port 80 to send to: KServe names the first non-gRPC numeric target port, else 8080.
    const rest = (spec.ports ?? []).find(
      (p) => p.appProtocol !== AppProtocol.H2c && !/grpc/.test(p.name ?? ''),
    );
    host += `:${typeof rest?.targetPort === 'number' ? rest.targetPort : 8080}`;
  }
  return { url, addressUrl: `http://${host}`, ingressReady: { status: 'True' } };
}

function pathOf(url: string): string {
  try {
    const path = new URL(url).pathname;
    return path === '/' ? '' : path;
  } catch {
    return '';
  }
}
