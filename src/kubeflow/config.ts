/**
 * Kubeflow's mesh settings, read from the objects a cluster has: the profile controller's ConfigMap
 * (`USERID_HEADER`, `USERID_PREFIX`, `ISTIO_INGRESS_GATEWAY_PRINCIPAL`, `NOTEBOOK_CONTROLLER_PRINCIPAL`,
 * `KFP_UI_PRINCIPAL`; any ConfigMap whose name starts with `profiles-config`), the notebook controller's
 * (`USE_ISTIO`, `ISTIO_GATEWAY`; `notebook-controller-config*`), its namespace-labels file (ConfigMap `namespace-labels-data`, key `namespace-labels.yaml`), and kfmesh's own ConfigMap `kfmesh`
 * (`gatewayApiIngress: ns/name`, `waypointName`). Defaults are the ones Kubeflow's manifests ship.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { dataOf } from '../model/specs.ts';
import { parseYaml } from '../load/yaml.ts';
import { configMapOf, type ConfigMapInput } from '../model/inputs.ts';
import { InputError, messageOf } from '../model/errors.ts';
import { isPlainObject, refOf } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { gatewayServiceAccount, principalOf } from '../model/identity.ts';

/** The ConfigMaps Kubeflow's settings are read from (`kubeflowConfigFrom`). */
export const KubeflowConfigMaps = {
  profiles: {
    name: 'profiles-config',
    prefix: true,
    namespace: 'kubeflow',
    reader: 'the profile controller',
  },
  notebooks: {
    name: 'notebook-controller-config',
    prefix: true,
    namespace: 'kubeflow',
    reader: 'the notebook controller',
  },
  namespaceLabels: {
    name: 'namespace-labels-data',
    prefix: true,
    namespace: 'kubeflow',
    reader: "the profile controller's namespace labels",
  },
  kfmesh: { name: 'kfmesh', namespace: 'kubeflow', reader: 'kfmesh' },
} as const satisfies Record<string, ConfigMapInput>;

/** What `kubeflowConfigFrom` reads. */
export const kubeflowConfigInputs: readonly ConfigMapInput[] = Object.values(KubeflowConfigMaps);

/** The settings that shape Kubeflow's mesh objects. */
export interface KubeflowConfig {
  userIdHeader: string;
  userIdPrefix: string;
  /** The Istio ingress gateway's identity (sidecar mode). */
  ingressGatewayPrincipal: string;
  notebookControllerPrincipal: string;
  kfpUiPrincipal: string;
  /** Labels the profile controller adds to namespaces (`""` removes a key). */
  namespaceLabels: Record<string, string>;
  /** The Istio Gateway notebooks are served through in sidecar mode (`ISTIO_GATEWAY` of the notebook controller). */
  istioGateway: string;
  /** The notebook controller writes a VirtualService per notebook (`USE_ISTIO: "true"`). */
  notebookRoutes: boolean;
  /** The Gateway API ingress Gateway of ambient mode (`ns/name`, class istio). */
  gatewayApiIngress: { namespace: string; name: string };
  /**
   * The ingress identities an ambient owner policy admits: those of the ingress gateways the input has
   * (`ambientIngressPrincipals`).
   */
  ambientIngressPrincipals: string[];
  /** The name of each user namespace's waypoint. */
  waypointName: string;
  trustDomain: string;
}

/** Kubeflow's shipped defaults. */
export const defaultKubeflowConfig: KubeflowConfig = {
  userIdHeader: 'kubeflow-userid',
  userIdPrefix: '',
  ingressGatewayPrincipal: 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account',
  notebookControllerPrincipal: 'cluster.local/ns/kubeflow/sa/notebook-controller-service-account',
  kfpUiPrincipal: 'cluster.local/ns/kubeflow/sa/ml-pipeline-ui',
  namespaceLabels: {},
  istioGateway: 'kubeflow/kubeflow-gateway',
  notebookRoutes: true,
  gatewayApiIngress: { namespace: 'kubeflow', name: 'kubeflow-gateway' },
  ambientIngressPrincipals: ['cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio'],
  waypointName: 'waypoint',
  trustDomain: 'cluster.local',
};

/** The identity Istio gives a Gateway API gateway of class istio: service account `<name>-istio`. */
function gatewayApiIngressPrincipal(config: KubeflowConfig): string {
  const { namespace, name } = config.gatewayApiIngress;
  return principalOf({ namespace, serviceAccount: gatewayServiceAccount(name) }, config.trustDomain);
}

/**
 * The ingress identities owner policies admit in ambient mode, from the gateways the input has: the
 * Gateway API ingress's when its Gateway is there, and the Istio ingress gateway's
 * (`ISTIO_INGRESS_GATEWAY_PRINCIPAL`) while the Istio Gateway Kubeflow routes through is there (a platform
 * not migrated yet, or one keeping the old gateway for its controllers). With neither, the Gateway API
 * ingress's: the gateway an ambient platform is to have.
 */
function ambientIngressPrincipals(snapshot: Snapshot, config: KubeflowConfig): string[] {
  const { namespace, name } = config.gatewayApiIngress;
  const gatewayApi = snapshot.get(GroupKind.Gateway, namespace, name) !== undefined;
  const [istioNamespace = '', istioName = ''] = config.istioGateway.split('/');
  const istio = snapshot.get(GroupKind.IstioGateway, istioNamespace, istioName) !== undefined;
  const principals = [
    ...(gatewayApi || !istio ? [gatewayApiIngressPrincipal(config)] : []),
    ...(istio ? [config.ingressGatewayPrincipal] : []),
  ];
  return principals;
}

/** Reads the Kubeflow settings; a malformed value is an InputError naming the ConfigMap and key. */
export function kubeflowConfigFrom(snapshot: Snapshot): KubeflowConfig {
  const configMaps = snapshot.list(GroupKind.ConfigMap);
  const config: KubeflowConfig = { ...defaultKubeflowConfig, namespaceLabels: {} };
  const profiles = configMapOf(KubeflowConfigMaps.profiles, configMaps);
  if (profiles) {
    const data = dataOf(profiles);
    const text = (key: string): string | undefined => data[key];
    config.userIdHeader = text('USERID_HEADER') ?? config.userIdHeader;
    config.userIdPrefix = text('USERID_PREFIX') ?? config.userIdPrefix;
    config.ingressGatewayPrincipal =
      text('ISTIO_INGRESS_GATEWAY_PRINCIPAL') ?? config.ingressGatewayPrincipal;
    config.notebookControllerPrincipal =
      text('NOTEBOOK_CONTROLLER_PRINCIPAL') ?? config.notebookControllerPrincipal;
    config.kfpUiPrincipal = text('KFP_UI_PRINCIPAL') ?? config.kfpUiPrincipal;
  }
  const notebooks = configMapOf(KubeflowConfigMaps.notebooks, configMaps);
  if (notebooks) {
    const data = dataOf(notebooks);
    config.istioGateway = data['ISTIO_GATEWAY'] || config.istioGateway;
    config.notebookRoutes = data['USE_ISTIO'] === 'true';
  }
  const labels = configMapOf(KubeflowConfigMaps.namespaceLabels, configMaps);
  const labelsText = labels ? dataOf(labels)['namespace-labels.yaml'] : undefined;
  if (labels && typeof labelsText === 'string') {
    let parsed: unknown;
    try {
      parsed = parseYaml(labelsText);
    } catch (error) {
      throw new InputError(
        {
          location: snapshot.locate(labels, ['data', 'namespace-labels.yaml']),
          object: refOf(labels),
          field: 'data.namespace-labels.yaml',
        },
        `invalid YAML: ${messageOf(error).split('\n')[0] ?? ''}`,
      );
    }
    if (parsed !== null && parsed !== undefined) {
      if (!isPlainObject(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
        throw new InputError(
          {
            location: snapshot.locate(labels, ['data', 'namespace-labels.yaml']),
            object: refOf(labels),
            field: 'data.namespace-labels.yaml',
          },
          'expected a mapping of label names to string values',
        );
      }
      config.namespaceLabels = parsed as Record<string, string>;
    }
  }
  const own = configMapOf(KubeflowConfigMaps.kfmesh, configMaps);
  if (own) {
    const data = dataOf(own);
    const ingress = data['gatewayApiIngress'];
    if (typeof ingress === 'string') {
      const [namespace, name] = ingress.split('/');
      if (!namespace || !name)
        throw new InputError(
          {
            location: snapshot.locate(own, ['data', 'gatewayApiIngress']),
            object: refOf(own),
            field: 'data.gatewayApiIngress',
          },
          'expected <namespace>/<name>',
        );
      config.gatewayApiIngress = { namespace, name };
    }
    if (typeof data['waypointName'] === 'string') config.waypointName = data['waypointName'];
  }
  config.ambientIngressPrincipals = ambientIngressPrincipals(snapshot, config);
  return config;
}
