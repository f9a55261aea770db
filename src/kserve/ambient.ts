/**
 * What KServe lacks for in-mesh callers in ambient mode (the counterpart of the `mesh` fix): for a
 * RawDeployment InferenceService, a top-level Service `<isvc>` and a mesh HTTPRoute with that Service as
 * parent, which the namespace's waypoint uses to send `<isvc>.<ns>.svc` to the transformer or predictor and
 * `:explain` to the explainer, with the headers KServe sets. Serverless InferenceServices can't run in
 * ambient mode (Knative is not supported there, KEP-2676): they get a finding instead.
 */
import { ModeName } from './config.ts';
import type { Finding } from '../model/finding.ts';
import { isComponentReady, type Component, type InferenceService } from '../model/inference-service.ts';
import { refOf, type KubeObject } from '../model/object.ts';
import { inventedMeta } from '../model/ownership.ts';
import { explainPrefix } from './hosts.ts';
import { componentServiceName, entryComponent } from './names.ts';
import { Annotation } from '../model/vocabulary.ts';

/** Finding code: a Serverless InferenceService in an ambient namespace. */
export const ServerlessInAmbient = 'KFM301';

/** The top-level Service and mesh HTTPRoute of a RawDeployment InferenceService, once every component is ready. */
export function ambientInferenceServiceObjects(isvc: InferenceService): KubeObject[] {
  const components: Component[] = ['predictor'];
  if (isvc.spec.transformer) components.push('transformer');
  if (isvc.spec.explainer) components.push('explainer');
  if (!components.every((c) => isComponentReady(isvc, c))) return [];
  const name = isvc.metadata.name ?? '';
  const namespace = isvc.metadata.namespace ?? 'default';
  const headers = {
    type: 'RequestHeaderModifier',
    requestHeaderModifier: {
      set: [
        { name: 'KServe-Isvc-Name', value: name },
        { name: 'KServe-Isvc-Namespace', value: namespace },
      ],
    },
  };
  const rules: Record<string, unknown>[] = [];
  if (isvc.spec.explainer) {
    rules.push({
      matches: [{ path: { type: 'RegularExpression', value: explainPrefix } }],
      filters: [headers],
      backendRefs: [{ name: componentServiceName(isvc, 'explainer'), port: 80 }],
    });
  }
  rules.push({
    matches: [{ path: { type: 'PathPrefix', value: '/' } }],
    filters: [headers],
    backendRefs: [{ name: componentServiceName(isvc, entryComponent(isvc)), port: 80 }],
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      // No selector: the name exists for the waypoint, which routes it to the component Services.
      metadata: inventedMeta(isvc, name, namespace),
      spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: inventedMeta(isvc, `${name}-mesh`, namespace),
      spec: { parentRefs: [{ group: '', kind: 'Service', name, port: 80 }], rules },
    },
  ];
}

/** The finding for a Serverless InferenceService whose namespace runs in ambient mode. */
export function serverlessInAmbientFinding(isvc: InferenceService): Finding {
  return {
    code: ServerlessInAmbient,
    severity: 'warning',
    object: refOf(isvc),
    field: `metadata.annotations.${Annotation.DeploymentMode}`,
    message: `${ModeName.Knative} InferenceServices are not supported in ambient mode: Knative serving has no ambient support (net-istio), and KEP-2676 leaves it out; its sidecar-mode objects are rendered unchanged`,
    fix: `set serving.kserve.io/deploymentMode: ${ModeName.SetStandard} (with enableGatewayApi in inferenceservice-config), or keep this namespace in sidecar mode with the label kfmesh.io/mode: sidecar`,
  };
}
