/**
 * Standard/RawDeployment mode with `enableGatewayApi`: the HTTPRoutes KServe writes per component and at the
 * top level (`reconcilers/ingress/httproute_reconciler.go`).
 */
import { specIfKind } from '../model/specs.ts';
import { isComponentReady, type Component, type InferenceService } from '../model/inference-service.ts';
import type { KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { KServeConfig } from './config.ts';
import {
  additionalHosts,
  explainPrefix,
  fallbackPrefix,
  generateDomainName,
  generateUrlPath,
  pathBasedExplainSuffix,
  type TemplateValues,
} from './hosts.ts';
import { childMeta, componentServiceName, entryComponent, withoutKeys } from './names.ts';
import { AppProtocol, GroupKind, Group } from '../model/vocabulary.ts';

/** KServe's default request timeout of HTTPRoute rules. */
const DefaultRouteTimeout = '60s';

const grpcPathRegex = '^/inference\\.GRPCInferenceService/.*$';

type Rule = Record<string, unknown>;

/** The values KServe's domain template sees for an object name of this InferenceService. */
export function templateValues(isvc: InferenceService, name: string, config: KServeConfig): TemplateValues {
  return {
    Name: name,
    Namespace: isvc.metadata.namespace ?? '',
    IngressDomain: config.ingress.ingressDomain,
    Annotations: isvc.metadata.annotations ?? {},
    Labels: isvc.metadata.labels ?? {},
  };
}

/** The REST and gRPC ports of a component's Service when it serves both (KServe's `detectServiceProtocolPorts`). */
function dualProtocolPorts(
  snapshot: Snapshot,
  isvc: InferenceService,
  component: Component,
): { rest: number; grpc: number } | undefined {
  const service = snapshot.get(
    GroupKind.Service,
    isvc.metadata.namespace ?? '',
    componentServiceName(isvc, component),
  );
  const ports = specIfKind(service, '/Service').ports ?? [];
  const isGrpc = (p: { name?: string; appProtocol?: string }): boolean =>
    p.appProtocol === AppProtocol.H2c || /grpc|h2c/.test(p.name ?? '');
  const grpc = ports.find(isGrpc)?.port;
  const rest = ports.find((p) => !isGrpc(p))?.port;
  return grpc !== undefined && rest !== undefined ? { rest, grpc } : undefined;
}

/** Builds the rules of one route: the shared filter, backend, port and timeout of a component. */
class RuleBuilder {
  readonly #isvc: InferenceService;
  readonly #config: KServeConfig;
  readonly #snapshot: Snapshot;

  constructor(isvc: InferenceService, config: KServeConfig, snapshot: Snapshot) {
    this.#isvc = isvc;
    this.#config = config;
    this.#snapshot = snapshot;
  }

  /** One rule: a regex path match (and optional header matches) to a component's Service. */
  rule(pathRegex: string, component: Component, port = 80, headers?: Rule[]): Rule {
    const name = this.#isvc.metadata.name ?? '';
    const namespace = this.#isvc.metadata.namespace ?? '';
    const match: Rule = { path: { type: 'RegularExpression', value: pathRegex } };
    if (headers) match['headers'] = headers;
    const rule: Rule = {
      matches: [match],
      filters: [
        {
          type: 'RequestHeaderModifier',
          requestHeaderModifier: {
            set: [
              { name: 'KServe-Isvc-Name', value: name },
              { name: 'KServe-Isvc-Namespace', value: namespace },
            ],
          },
        },
      ],
      backendRefs: [{ kind: 'Service', name: componentServiceName(this.#isvc, component), namespace, port }],
    };
    const timeout = this.#timeout(component);
    if (timeout) rule['timeouts'] = { request: timeout };
    return rule;
  }

  /** The catch-all rules of a component: one rule, or gRPC then REST when its Service serves both. */
  fallback(component: Component, pathRegex = fallbackPrefix): Rule[] {
    const dual = dualProtocolPorts(this.#snapshot, this.#isvc, component);
    if (!dual) return [this.rule(pathRegex, component)];
    const contentType = [{ type: 'RegularExpression', name: 'content-type', value: '^application/grpc.*' }];
    return [
      this.rule(grpcPathRegex, component, dual.grpc, contentType),
      this.rule(pathRegex, component, dual.rest),
    ];
  }

  /** KServe's `resolveTimeout`: the component's `timeout` in seconds, 60s by default, none when disabled. */
  #timeout(component: Component): string | undefined {
    if (this.#config.ingress.disableHTTPRouteTimeout) return undefined;
    const seconds = this.#isvc.spec[component]?.timeout;
    return typeof seconds === 'number' ? `${seconds}s` : DefaultRouteTimeout;
  }
}

function route(
  isvc: InferenceService,
  config: KServeConfig,
  name: string,
  hostnames: string[],
  rules: Rule[],
): KubeObject {
  const [gwNamespace, gwName] = config.ingress.kserveIngressGateway.split('/') as [string, string];
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: childMeta(
      isvc,
      name,
      withoutKeys(isvc.metadata.labels, config.serviceLabelDisallowedList),
      withoutKeys(isvc.metadata.annotations, config.serviceAnnotationDisallowedList),
    ),
    spec: {
      parentRefs: [{ group: Group.GatewayApi, kind: 'Gateway', namespace: gwNamespace, name: gwName }],
      hostnames,
      rules,
    },
  };
}

/** The route of one component (`<isvc>-<component>`), when that component is ready. */
export function componentHTTPRouteFor(
  isvc: InferenceService,
  component: Component,
  config: KServeConfig,
  snapshot: Snapshot,
): KubeObject | undefined {
  if (!isComponentReady(isvc, component)) return undefined;
  const name = `${isvc.metadata.name ?? ''}-${component}`;
  const host = generateDomainName(config.ingress.domainTemplate, templateValues(isvc, name, config));
  return route(isvc, config, name, [host], new RuleBuilder(isvc, config, snapshot).fallback(component));
}

/** The top-level route (`<isvc>`), when every component in the spec is ready. */
export function topLevelHTTPRouteFor(
  isvc: InferenceService,
  config: KServeConfig,
  snapshot: Snapshot,
): KubeObject | undefined {
  const components: Component[] = ['predictor'];
  if (isvc.spec.transformer) components.push('transformer');
  if (isvc.spec.explainer) components.push('explainer');
  if (!components.every((c) => isComponentReady(isvc, c))) return undefined;
  const { ingress } = config;
  const name = isvc.metadata.name ?? '';
  const topHost = generateDomainName(ingress.domainTemplate, templateValues(isvc, name, config));
  const hostnames = [topHost];
  for (const host of additionalHosts([ingress.ingressDomain], topHost, ingress.additionalIngressDomains)) {
    if (!hostnames.includes(host)) hostnames.push(host);
  }
  const rules = new RuleBuilder(isvc, config, snapshot);
  const entry = entryComponent(isvc);
  const list: Rule[] = [];
  if (isvc.spec.explainer) list.push(rules.rule(explainPrefix, 'explainer'));
  list.push(...rules.fallback(entry));
  if (ingress.pathTemplate) {
    const path = generateUrlPath(ingress.pathTemplate, name, isvc.metadata.namespace ?? '');
    if (isvc.spec.explainer) list.push(rules.rule(path + pathBasedExplainSuffix, 'explainer'));
    list.push(...rules.fallback(entry, `${path}/`));
    hostnames.push(ingress.ingressDomain);
  }
  return route(isvc, config, name, hostnames, list);
}
