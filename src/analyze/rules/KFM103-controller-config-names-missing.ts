/**
 * KFM103: a controller's configuration that names a gateway, a gateway Service or an identity the platform
 * does not have (docs/semantics.md, KServe, Knative and Kubeflow). KServe's `inferenceservice-config`
 * (`ingress`: `ingressGateway`, `localGateway`, `localGatewayService`, `kserveIngressGateway` with the
 * Gateway API), Knative's `config-istio` (`gateway.<ns>.<name>`, `local-gateway.<ns>.<name>` and the Service
 * each names), the notebook controller's `ISTIO_GATEWAY`, and the profile controller's principals
 * (`ISTIO_INGRESS_GATEWAY_PRINCIPAL`, `NOTEBOOK_CONTROLLER_PRINCIPAL`, `KFP_UI_PRINCIPAL`). The controllers
 * write routes bound to a gateway that is not there (models and notebooks unreachable) or policies that
 * admit an identity no pod has (users locked out). A name is checked only where the input holds objects
 * of its kind (in its namespace, for Services and service accounts): a partial input cannot tell.
 */
import { accountOfPrincipal } from '../../model/identity.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { dataOf } from '../../model/specs.ts';
import { GroupKind, Group } from '../../model/vocabulary.ts';
import type { Snapshot } from '../../load/snapshot.ts';
import { KServeConfigMap, kserveConfigFrom } from '../../kserve/config.ts';
import { KnativeConfigMaps } from '../../kserve/knative.ts';
import { KubeflowConfigMaps, kubeflowConfigFrom } from '../../kubeflow/config.ts';
import { configMapOf } from '../../model/inputs.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const controllerConfigNamesMissing: Rule = {
  code: 'KFM103',
  name: 'controller-config-names-missing',
  severity: Severity.Error,
  description:
    "a controller's configuration (KServe, Knative, notebook or profile controller) names a gateway, gateway Service or identity the platform lacks",
  reads: [GroupKind.ConfigMap],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const lookup = new Lookup(snapshot);
    const findings: Finding[] = [];
    const report = (configMap: KubeObject, key: string, what: string, fix: string) =>
      findings.push(
        findingOf(controllerConfigNamesMissing, context, configMap, ['data', key], what, { fix }),
      );
    const configMaps = snapshot.list(GroupKind.ConfigMap);
    kserveGateways(context, lookup, report, configMaps);
    knativeGateways(lookup, report, configMaps);
    kubeflowNames(context, lookup, report, configMaps);
    return findings;
  },
};

type Report = (configMap: KubeObject, key: string, what: string, fix: string) => void;

/** KServe's `inferenceservice-config`: the gateways and local gateway Service of its `ingress`. */
function kserveGateways(
  context: AnalyzeContext,
  lookup: Lookup,
  report: Report,
  configMaps: readonly KubeObject[],
): void {
  const kserve = configMapOf(KServeConfigMap, configMaps);
  if (kserve && dataOf(kserve)['ingress'] !== undefined) {
    const ingress = kserveConfigFrom(context.snapshot, context.mesh().clusterDomain).ingress;
    const gateways = ingress.enableGatewayApi
      ? [['kserveIngressGateway', ingress.kserveIngressGateway, Group.GatewayApi] as const]
      : [
          ['ingressGateway', ingress.ingressGateway, Group.IstioNetworking] as const,
          ['localGateway', ingress.localGateway, Group.IstioNetworking] as const,
        ];
    for (const [field, name, group] of gateways)
      if (lookup.gatewayMissing(group, name))
        report(
          kserve,
          'ingress',
          `ingress.${field} names Gateway ${name}, which does not exist: KServe binds every InferenceService's routes to it`,
          `create Gateway ${name}, or name the gateway the platform has`,
        );
    for (const field of ['localGatewayService', 'knativeLocalGatewayService'] as const)
      if (lookup.serviceHostMissing(ingress[field]))
        report(
          kserve,
          'ingress',
          `ingress.${field} names ${ingress[field]}, which no Service has: KServe's cluster-local routes point at it`,
          'name the Service of the local gateway the platform has',
        );
  }
}

/** Knative's `config-istio`: each gateway key and the Service it names. */
function knativeGateways(lookup: Lookup, report: Report, configMaps: readonly KubeObject[]): void {
  const knative = configMapOf(KnativeConfigMaps.istio, configMaps);
  if (knative)
    for (const [key, value] of Object.entries(dataOf(knative))) {
      const m = /^(?:local-)?gateway\.([^.]+)\.([^.]+)$/.exec(key);
      if (!m) continue;
      const name = `${m[1]}/${m[2]}`;
      if (lookup.gatewayMissing(Group.IstioNetworking, name))
        report(
          knative,
          key,
          `names Gateway ${name}, which does not exist: Knative binds its routes to it`,
          `create Gateway ${name}, or correct the key`,
        );
      if (lookup.serviceHostMissing(value))
        report(
          knative,
          key,
          `names ${value} as the gateway's Service, which does not exist`,
          "name the Service of the gateway's pods",
        );
    }
}

/** The notebook controller's gateway and the profile controller's principals. */
function kubeflowNames(
  context: AnalyzeContext,
  lookup: Lookup,
  report: Report,
  configMaps: readonly KubeObject[],
): void {
  const notebooks = configMapOf(KubeflowConfigMaps.notebooks, configMaps);
  const { istioGateway, notebookRoutes } = kubeflowConfigFrom(context.snapshot);
  if (notebooks && notebookRoutes && lookup.gatewayMissing(Group.IstioNetworking, istioGateway))
    report(
      notebooks,
      dataOf(notebooks)['ISTIO_GATEWAY'] ? 'ISTIO_GATEWAY' : 'USE_ISTIO',
      `names Gateway ${istioGateway}, which does not exist: every notebook's VirtualService is bound to it`,
      `create Gateway ${istioGateway}, or name the gateway the platform has`,
    );
  const profiles = configMapOf(KubeflowConfigMaps.profiles, configMaps);
  if (profiles)
    for (const key of [
      'ISTIO_INGRESS_GATEWAY_PRINCIPAL',
      'NOTEBOOK_CONTROLLER_PRINCIPAL',
      'KFP_UI_PRINCIPAL',
    ]) {
      const principal = dataOf(profiles)[key];
      if (principal && lookup.principalMissing(principal))
        report(
          profiles,
          key,
          `names ${principal}, a service account that does not exist: every Profile's policy admits an identity no pod has`,
          'name the service account the component runs as',
        );
    }
}

/** What the input has, asked only where it holds objects of that kind. */
class Lookup {
  readonly #snapshot: Snapshot;
  constructor(snapshot: Snapshot) {
    this.#snapshot = snapshot;
  }

  gatewayMissing(group: string, name: string): boolean {
    const [ns = '', gateway = ''] = name.split('/');
    if (!gateway || this.#snapshot.list(`${group}/Gateway`).length === 0) return false;
    return this.#snapshot.get(`${group}/Gateway`, ns, gateway) === undefined;
  }

  /** `name.namespace.svc[.cluster domain]`: missing when the input has Services in that namespace but not it. */
  serviceHostMissing(host: string | undefined): boolean {
    const m = host ? /^([^.]+)\.([^.]+)\.svc(\.|$)/.exec(host) : null;
    if (!m) return false;
    const [, name = '', ns = ''] = m;
    return (
      this.#snapshot.list(GroupKind.Service, ns).length > 0 &&
      this.#snapshot.get(GroupKind.Service, ns, name) === undefined
    );
  }

  /** `<trust domain>/ns/<ns>/sa/<name>`: missing when the input has service accounts in that namespace but not it. */
  principalMissing(principal: string): boolean {
    const account = accountOfPrincipal(principal);
    if (!account) return false;
    const { namespace: ns, serviceAccount: name } = account;
    return (
      this.#snapshot.list(GroupKind.ServiceAccount, ns).length > 0 &&
      this.#snapshot.get(GroupKind.ServiceAccount, ns, name) === undefined
    );
  }
}
