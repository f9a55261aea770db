/** Objects tests build clusters from: KServe's ConfigMap and InferenceServices in a chosen state. */
import type { KubeObject } from '../src/model/object.ts';

/** The gateways of a standard Knative + Istio install. */
export const knativeGateways = {
  ingressGateway: 'knative-serving/knative-ingress-gateway',
  localGateway: 'knative-serving/knative-local-gateway',
  localGatewayService: 'knative-local-gateway.istio-system.svc.cluster.local',
};

/** `kserve/inferenceservice-config` with the Knative gateways plus `ingress`, and optional other keys. */
export function inferenceServiceConfig(
  ingress: Record<string, unknown> = {},
  data: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'inferenceservice-config', namespace: 'kserve' },
    data: { ingress: JSON.stringify({ ...knativeGateways, ...ingress }), ...data },
  };
}

/** Options of a generated InferenceService. */
export interface IsvcOptions {
  namespace?: string;
  components?: string[];
  notReady?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  spec?: Record<string, Record<string, unknown>>;
  domain?: string;
}

/** An InferenceService with the given components, ready unless listed in `notReady`, with Knative URLs. */
export function inferenceService(name: string, options: IsvcOptions = {}): KubeObject {
  const namespace = options.namespace ?? 'team';
  const components = ['predictor', ...(options.components ?? [])];
  const spec: Record<string, unknown> = {};
  for (const c of components) spec[c] = options.spec?.[c] ?? { model: { modelFormat: { name: 'sklearn' } } };
  const metadata: KubeObject['metadata'] = { name, namespace };
  if (options.labels) metadata.labels = options.labels;
  if (options.annotations) metadata.annotations = options.annotations;
  return {
    apiVersion: 'serving.kserve.io/v1beta1',
    kind: 'InferenceService',
    metadata,
    spec,
    status: {
      conditions: components.map((c) => ({
        type: `${c.charAt(0).toUpperCase()}${c.slice(1)}Ready`,
        status: options.notReady?.includes(c) ? 'False' : 'True',
      })),
      components: Object.fromEntries(
        components.map((c) => [
          c,
          { url: `http://${name}-${c}.${namespace}.${options.domain ?? 'example.com'}` },
        ]),
      ),
    },
  };
}
