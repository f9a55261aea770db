/**
 * Migration phase: the controllers' configuration (docs/semantics.md, The migration). Kubeflow's
 * controllers keep creating mesh objects after the migration from their own ConfigMaps: KServe binds new
 * InferenceServices to `ingress.ingressGateway` (unless `enableGatewayApi`), Knative Serving binds Knative
 * Services' external routes to the gateways of `config-istio` (`gateway.<ns>.<name>`), the notebook
 * controller binds notebooks to `ISTIO_GATEWAY` (with `USE_ISTIO: "true"`), and the profile controller
 * writes `ISTIO_INGRESS_GATEWAY_PRINCIPAL` into every new Profile's owner policy. A gateway any of them
 * names is kept beside its conversion, so what they create next is served; the profile controller's
 * principal names the gateway that what they create next is routed through. Each is in the report.
 */
import { GroupKind } from '../model/vocabulary.ts';
import type { KubeObject } from '../model/object.ts';
import { dataOf } from '../model/specs.ts';
import { configMapOf } from '../model/inputs.ts';
import { KServeConfigMap, ModeName } from '../kserve/config.ts';
import { KnativeConfigMaps } from '../kserve/knative.ts';
import { KubeflowConfigMaps } from '../kubeflow/config.ts';
import { step, type Facts, type MigrationInput } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import { action, changed } from './migration-report.ts';

/** A controller's configuration that names an Istio Gateway: where, and what the controller does with it. */
export interface GatewayUse {
  /** The controller, by name. */
  controller: string;
  configMap: KubeObject;
  field: string;
  /** What the controller builds on the gateway, in a sentence. */
  builds: string;
  /** How to stop it, so the old gateway can go. */
  retire: string;
  /**
   * The hosts of the routes it writes there (docs/semantics.md, One front door): they stay on the old
   * gateway while it does. None when its routes are cluster-local only.
   */
  hosts: string[];
}

/** The Istio Gateways (`ns/name`) the controllers' configuration names, with each place that names it. */
export function gatewaysNamedByControllers(input: MigrationInput): Map<string, GatewayUse[]> {
  const uses = new Map<string, GatewayUse[]>();
  const use = (gateway: string, found: GatewayUse) => {
    if (!input.snapshot.get(GroupKind.IstioGateway, ...splitName(gateway))) return;
    uses.set(gateway, [...(uses.get(gateway) ?? []), found]);
  };
  const configMaps = input.snapshot.list(GroupKind.ConfigMap);
  const knative = configMapOf(KnativeConfigMaps.istio, configMaps);
  for (const key of knative ? Object.keys(dataOf(knative)).sort() : []) {
    const gateway = /^gateway\.([^.]+)\.([^.]+)$/.exec(key);
    if (knative && gateway)
      use(`${gateway[1]}/${gateway[2]}`, {
        controller: 'Knative Serving',
        configMap: knative,
        field: `data.${key}`,
        builds: `Knative Serving binds every Knative Service's external routes (${ModeName.Knative} models) to it`,
        retire: `move the ${ModeName.Knative} models to ${ModeName.Standard} mode, then remove this key`,
        hosts: input.kserve.domainList.map((d) => `*.${d}`),
      });
  }
  const notebooks = configMapOf(KubeflowConfigMaps.notebooks, configMaps);
  const { notebookRoutes, istioGateway } = input.kubeflow;
  if (notebooks && notebookRoutes)
    use(istioGateway, {
      controller: 'the notebook controller',
      configMap: notebooks,
      field: 'data.ISTIO_GATEWAY',
      builds: "the notebook controller binds every new notebook's VirtualService to it",
      retire:
        'the notebook controller writes only VirtualServices: keep this gateway while notebooks are created',
      // Every notebook's route takes any host (notebook.ts writes the controller's route the same way).
      hosts: ['*'],
    });
  const kserve = configMapOf(KServeConfigMap, configMaps);
  if (kserve) {
    const { ingress } = input.kserve;
    if (!ingress.enableGatewayApi)
      use(ingress.ingressGateway, {
        controller: 'KServe',
        configMap: kserve,
        field: 'data.ingress: ingressGateway',
        builds: "KServe binds every new InferenceService's ingress routes to it",
        retire: `set enableGatewayApi: true with kserveIngressGateway naming the converted gateway (${ingress.ingressGateway}), for ${ModeName.Standard} models`,
        // A model's hosts are made under the ingress domain; with a path template, also the domain itself.
        hosts: [`*.${ingress.ingressDomain}`, ...(ingress.pathTemplate ? [ingress.ingressDomain] : [])],
      });
  }
  return uses;
}

/**
 * The profile controller's ingress principal: it names the old gateway's identity. Where the old gateway
 * goes, the users' ingress is the converted gateway, so it names that one. Where the old gateway is kept
 * because controllers build on it, what they create next (notebooks, models) is routed through the old
 * gateway only, so the owner policies the profile controller writes must admit that gateway's identity:
 * it stays, and the report gives the patch that names the converted gateway once the old one can go.
 */
export function profileControllerPrincipal(
  facts: Pick<Facts, 'input' | 'gateways'>,
  output: OutputView,
): Phase {
  const m = step(facts, output);
  const key = 'ISTIO_INGRESS_GATEWAY_PRINCIPAL';
  const configMap = configMapOf(KubeflowConfigMaps.profiles, m.input.snapshot.list(GroupKind.ConfigMap));
  const old = configMap ? dataOf(configMap)[key] : undefined;
  const renamed = old === undefined ? undefined : m.gateways.principalRenames.get(old);
  const next = renamed?.find((p) => p !== old);
  if (!configMap || old === undefined || next === undefined) return m.draft.done();
  if (renamed?.includes(old)) {
    const patch = JSON.stringify({ data: { [key]: next } });
    m.draft.note(
      configMap,
      action(
        `data.${key}`,
        `kept (${old}): the old gateway stays because controllers build on it, and what they create next is routed through it, so the owner policies the profile controller writes admit its identity; once the old gateway can go, apply kubectl patch configmap -n ${configMap.metadata.namespace ?? 'default'} ${configMap.metadata.name ?? ''} --type=merge -p '${patch}' and restart the profile controller`,
      ),
    );
    return m.draft.done();
  }
  const current = m.draft.current(configMap);
  m.draft.change(configMap, { ...current, data: { ...dataOf(current), [key]: next } });
  m.draft.note(
    configMap,
    changed(
      `data.${key}`,
      `the profile controller writes this principal into every new Profile's owner policy: it is the converted ingress gateway's (${next}) now, which replaces ${old}`,
    ),
  );
  return m.draft.done();
}

function splitName(gateway: string): [string, string] {
  const [namespace = '', name = ''] = gateway.split('/');
  return [namespace, name];
}
