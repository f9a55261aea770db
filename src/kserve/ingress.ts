/**
 * Standard/RawDeployment mode without the Gateway API: the Kubernetes Ingress KServe writes
 * (`reconcilers/ingress/kube_ingress_reconciler.go`). Its rules are host-based only.
 */
import { isComponentReady, type Component, type InferenceService } from '../model/inference-service.ts';
import type { KubeObject } from '../model/object.ts';
import type { KServeConfig } from './config.ts';
import { generateDomainName } from './hosts.ts';
import { templateValues } from './http-route.ts';
import { childMeta, componentServiceName } from './names.ts';

/** The Ingress of an InferenceService, when every component in its spec is ready. */
export function kubeIngressFor(isvc: InferenceService, config: KServeConfig): KubeObject | undefined {
  const components: Component[] = ['predictor'];
  if (isvc.spec.transformer) components.push('transformer');
  if (isvc.spec.explainer) components.push('explainer');
  if (!components.every((c) => isComponentReady(isvc, c))) return undefined;
  const name = isvc.metadata.name ?? '';
  const host = (objectName: string): string =>
    generateDomainName(config.ingress.domainTemplate, templateValues(isvc, objectName, config));
  const rule = (hostName: string, component: Component): Record<string, unknown> => ({
    host: hostName,
    http: {
      paths: [
        {
          path: '/',
          pathType: 'Prefix',
          backend: { service: { name: componentServiceName(isvc, component), port: { number: 80 } } },
        },
      ],
    },
  });
  const predictorHost = host(`${name}-predictor`);
  const rules: Record<string, unknown>[] = [];
  if (isvc.spec.transformer) {
    // As KServe writes it: the explainer host is computed from the transformer name, and the transformer host
    // routes to the predictor.
    const transformerHost = host(`${name}-transformer`);
    if (isvc.spec.explainer) rules.push(rule(transformerHost, 'explainer'));
    rules.push(
      rule(host(name), 'transformer'),
      rule(transformerHost, 'predictor'),
      rule(predictorHost, 'predictor'),
    );
  } else if (isvc.spec.explainer) {
    rules.push(
      rule(host(name), 'predictor'),
      rule(host(`${name}-explainer`), 'explainer'),
      rule(predictorHost, 'predictor'),
    );
  } else {
    rules.push(rule(host(name), 'predictor'), rule(predictorHost, 'predictor'));
  }
  const spec: Record<string, unknown> = { rules };
  if (config.ingress.ingressClassName) spec['ingressClassName'] = config.ingress.ingressClassName;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: childMeta(isvc, name, undefined, { ...(isvc.metadata.annotations ?? {}) }),
    spec,
  };
}
