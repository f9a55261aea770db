/**
 * KServe's configuration, read from the objects a cluster really has: the ConfigMap
 * `inferenceservice-config` (JSON in `data.ingress`, `data.deploy`, `data.inferenceService`) and Knative's
 * `config-domain`. Field names, defaults and checks follow KServe's `pkg/apis/serving/v1beta1/configmap.go`.
 */
import { dataOf } from '../model/specs.ts';
import { InputError, type ProblemContext, messageOf } from '../model/errors.ts';
import { isPlainObject, refOf, type KubeObject } from '../model/object.ts';
import { at } from '../model/checked.ts';
import { describeValue } from '../load/parse.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { Annotation, Label, GroupKind } from '../model/vocabulary.ts';
import { configMapOf, configMapsOf, type ConfigMapInput } from '../model/inputs.ts';
import { KnativeConfigMaps } from './knative.ts';

/** KServe's `IngressConfig` (JSON keys as in the ConfigMap). */
export interface IngressConfig {
  enableGatewayApi: boolean;
  kserveIngressGateway: string;
  ingressGateway: string;
  knativeLocalGatewayService: string;
  localGateway: string;
  localGatewayService: string;
  ingressDomain: string;
  ingressClassName: string;
  additionalIngressDomains: string[];
  domainTemplate: string;
  urlScheme: string;
  disableIstioVirtualHost: boolean;
  pathTemplate: string;
  disableIngressCreation: boolean;
  disableHTTPRouteTimeout: boolean;
}

/** KServe's deployment modes, old and new names. */
export const DeploymentMode = {
  Serverless: 'Serverless',
  Knative: 'Knative',
  ModelMesh: 'ModelMesh',
  RawDeployment: 'RawDeployment',
  Standard: 'Standard',
} as const;
export type DeploymentMode = (typeof DeploymentMode)[keyof typeof DeploymentMode];

/**
 * The modes as messages name them: KServe 0.16's names, with the ones before it in brackets (both parse;
 * a value to set says which release takes which).
 */
export const ModeName = {
  Standard: 'Standard (RawDeployment)',
  Knative: 'Knative (Serverless)',
  /** The annotation value that moves a model to Standard, for every release. */
  SetStandard: 'Standard (RawDeployment before KServe 0.16)',
} as const;

/** Everything KServe's ingress reconcilers read, resolved. */
export interface KServeConfig {
  ingress: IngressConfig;
  defaultDeploymentMode: DeploymentMode;
  /** Annotations not copied from the InferenceService onto generated objects. */
  serviceAnnotationDisallowedList: string[];
  /** Labels not copied onto generated HTTPRoutes. */
  serviceLabelDisallowedList: string[];
  /** Knative's domains (keys of `config-domain`), longest first. */
  domainList: string[];
  /** The cluster domain (`cluster.local` unless told otherwise). */
  clusterDomain: string;
}

/** The ConfigMap's name, and the namespace KServe installs it in. */
/** The ConfigMap KServe's settings are read from (`kserveConfigFrom`, with Knative's `config-domain`). */
export const KServeConfigMap = {
  name: 'inferenceservice-config',
  namespace: 'kserve',
  reader: 'KServe',
} as const satisfies ConfigMapInput;

/** What `kserveConfigFrom` reads. */
export const kserveConfigInputs: readonly ConfigMapInput[] = [KServeConfigMap, KnativeConfigMaps.domain];

/** The `data.ingress` KServe ships in `config/configmap/inferenceservice.yaml`. */
export const shippedIngressConfig: IngressConfig = {
  enableGatewayApi: false,
  kserveIngressGateway: 'kserve/kserve-ingress-gateway',
  ingressGateway: 'knative-serving/knative-ingress-gateway',
  knativeLocalGatewayService: 'knative-local-gateway.istio-system.svc.cluster.local',
  localGateway: 'knative-serving/knative-local-gateway',
  localGatewayService: 'knative-local-gateway.istio-system.svc.cluster.local',
  ingressDomain: 'example.com',
  ingressClassName: 'istio',
  additionalIngressDomains: [],
  domainTemplate: '{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}',
  urlScheme: 'http',
  disableIstioVirtualHost: false,
  pathTemplate: '',
  disableIngressCreation: false,
  disableHTTPRouteTimeout: false,
};

/** KServe's `constants.ServiceAnnotationDisallowedList`. */
const defaultAnnotationDisallowedList = [
  Annotation.MinScale,
  Annotation.MaxScale,
  Annotation.StorageInitializerSourceUri,
  Annotation.LastApplied,
];

/** KServe's `constants.RevisionTemplateLabelDisallowedList`. */
const defaultLabelDisallowedList = [Label.KnativeVisibility];

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Reads KServe's configuration from the snapshot; throws InputError naming the ConfigMap, key and field. */
export function kserveConfigFrom(snapshot: Snapshot, clusterDomain = 'cluster.local'): KServeConfig {
  const configMap = findInferenceServiceConfig(snapshot);
  const domainList = knativeDomains(snapshot);
  if (!configMap) {
    return {
      ingress: { ...shippedIngressConfig, additionalIngressDomains: [] },
      defaultDeploymentMode: DeploymentMode.Serverless,
      serviceAnnotationDisallowedList: [...defaultAnnotationDisallowedList],
      serviceLabelDisallowedList: [...defaultLabelDisallowedList],
      domainList,
      clusterDomain,
    };
  }
  const data = dataOf(configMap);
  const context = (key: string, field?: string): ProblemContext => ({
    location: snapshot.locate(configMap, ['data', key]),
    object: refOf(configMap),
    field: field === undefined ? `data.${key}` : `data.${key}: field "${field}"`,
  });
  const ingress = ingressConfigFrom(readJson(data, 'ingress', context), context);
  const deploy = readJson(data, 'deploy', context);
  const isvcConfig = readJson(data, 'inferenceService', context);
  return {
    ingress,
    defaultDeploymentMode: deploymentModeFrom(deploy, context),
    ...disallowedLists(isvcConfig, context),
    domainList,
    clusterDomain,
  };
}

/** The ConfigMap `inferenceservice-config`: the one in `kserve` if there are several. */
function findInferenceServiceConfig(snapshot: Snapshot): KubeObject | undefined {
  const configMaps = snapshot.list(GroupKind.ConfigMap);
  const all = configMapsOf(KServeConfigMap, configMaps);
  if (all.length <= 1 || all.some((cm) => cm.metadata.namespace === KServeConfigMap.namespace))
    return configMapOf(KServeConfigMap, configMaps);
  const where = all.map((cm) => cm.metadata.namespace).join(', ');
  throw new InputError(
    { object: refOf(at(all, 0)) },
    `several ConfigMaps named ${KServeConfigMap.name} (namespaces ${where}) and none in ${KServeConfigMap.namespace}: give only one`,
  );
}

/** Knative's domains: the keys of `config-domain` (in knative-serving when there are several), longest first. */
function knativeDomains(snapshot: Snapshot): string[] {
  const data = dataOf(configMapOf(KnativeConfigMaps.domain, snapshot.list(GroupKind.ConfigMap)));
  // Knative skips `_example`; the longest suffix is the most specific, and makes the choice independent of map order.
  return Object.keys(data)
    .filter((d) => !d.startsWith('_'))
    .sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}

type ContextFor = (key: string, field?: string) => ProblemContext;

function readJson(
  data: Record<string, unknown>,
  key: string,
  context: ContextFor,
): Record<string, unknown> | undefined {
  const raw = data[key];
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string')
    throw new InputError(context(key), `expected a JSON string, got ${describeValue(raw)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new InputError(context(key), `invalid JSON: ${messageOf(error)}`);
  }
  if (!isPlainObject(parsed))
    throw new InputError(context(key), `expected a JSON object, got ${describeValue(parsed)}`);
  return parsed;
}

function ingressConfigFrom(json: Record<string, unknown> | undefined, context: ContextFor): IngressConfig {
  if (!json)
    throw new InputError(
      context('ingress'),
      'missing: KServe needs the ingress configuration (at least ingressGateway)',
    );
  // Fields left out are zero in KServe (Go's JSON decoding), then a few get defaults below; the fields are
  // read in KServe's order, so the first of several wrong ones is the one reported.
  const field = <T>(name: keyof IngressConfig, zero: T, ok: (v: unknown) => v is T, expected: string): T => {
    const value = json[name];
    if (value === undefined || value === null) return zero;
    if (!ok(value))
      throw new InputError(context('ingress', name), `expected ${expected}, got ${describeValue(value)}`);
    return value;
  };
  const bool = (name: keyof IngressConfig) =>
    field(name, false, (v): v is boolean => typeof v === 'boolean', 'a boolean');
  const str = (name: keyof IngressConfig) =>
    field(name, '', (v): v is string => typeof v === 'string', 'a string');
  const strings = (name: keyof IngressConfig) => [
    ...field(
      name,
      [],
      (v): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string'),
      'a list of strings',
    ),
  ];
  const ingress: IngressConfig = {
    enableGatewayApi: bool('enableGatewayApi'),
    kserveIngressGateway: str('kserveIngressGateway'),
    ingressGateway: str('ingressGateway'),
    knativeLocalGatewayService: str('knativeLocalGatewayService'),
    localGateway: str('localGateway'),
    localGatewayService: str('localGatewayService'),
    ingressDomain: str('ingressDomain'),
    ingressClassName: str('ingressClassName'),
    additionalIngressDomains: strings('additionalIngressDomains'),
    domainTemplate: str('domainTemplate'),
    urlScheme: str('urlScheme'),
    disableIstioVirtualHost: bool('disableIstioVirtualHost'),
    pathTemplate: str('pathTemplate'),
    disableIngressCreation: bool('disableIngressCreation'),
    disableHTTPRouteTimeout: bool('disableHTTPRouteTimeout'),
  };
  validateIngressConfig(ingress, context);
  if (!ingress.knativeLocalGatewayService) ingress.knativeLocalGatewayService = ingress.localGatewayService;
  if (!ingress.domainTemplate) ingress.domainTemplate = shippedIngressConfig.domainTemplate;
  if (!ingress.ingressDomain) ingress.ingressDomain = shippedIngressConfig.ingressDomain;
  if (!ingress.urlScheme) ingress.urlScheme = shippedIngressConfig.urlScheme;
  return ingress;
}

/** The checks of KServe's `NewIngressConfig`. */
function validateIngressConfig(ingress: IngressConfig, context: ContextFor): void {
  if (ingress.enableGatewayApi) {
    if (!ingress.kserveIngressGateway)
      throw new InputError(
        context('ingress', 'kserveIngressGateway'),
        'required when enableGatewayApi is true',
      );
    const parts = ingress.kserveIngressGateway.split('/');
    if (parts.length !== 2)
      throw new InputError(
        context('ingress', 'kserveIngressGateway'),
        'should be in the format <namespace>/<name>',
      );
    const [ns = '', name = ''] = parts;
    if (!dns1123Label.test(name))
      throw new InputError(
        context('ingress', 'kserveIngressGateway'),
        `gateway name ${JSON.stringify(name)} is invalid`,
      );
    if (!dns1123Label.test(ns))
      throw new InputError(
        context('ingress', 'kserveIngressGateway'),
        `gateway namespace ${JSON.stringify(ns)} is invalid`,
      );
  }
  if (!ingress.ingressGateway) throw new InputError(context('ingress', 'ingressGateway'), 'required');
  if (ingress.pathTemplate && !ingress.ingressDomain) {
    throw new InputError(context('ingress', 'ingressDomain'), 'required when pathTemplate is given');
  }
}

function deploymentModeFrom(
  deploy: Record<string, unknown> | undefined,
  context: ContextFor,
): DeploymentMode {
  const value = deploy?.['defaultDeploymentMode'];
  if (value === undefined || value === null || value === '') return DeploymentMode.Serverless;
  const mode = parseDeploymentMode(value);
  if (!mode)
    throw new InputError(
      context('deploy', 'defaultDeploymentMode'),
      `expected one of ${Object.values(DeploymentMode).join(', ')}, got ${describeValue(value)}`,
    );
  return mode;
}

/** A deployment mode from text, or undefined when the text names none. */
export function parseDeploymentMode(value: unknown): DeploymentMode | undefined {
  return Object.values(DeploymentMode).find((m) => m === value);
}

/** True for the modes KServe serves through Knative and the Istio VirtualService. */
export function isKnativeMode(mode: DeploymentMode): boolean {
  return (
    mode === DeploymentMode.Serverless || mode === DeploymentMode.Knative || mode === DeploymentMode.ModelMesh
  );
}

function disallowedLists(
  json: Record<string, unknown> | undefined,
  context: ContextFor,
): Pick<KServeConfig, 'serviceAnnotationDisallowedList' | 'serviceLabelDisallowedList'> {
  // KServe only fills these lists when data.inferenceService is present; then user entries are appended to its defaults.
  if (!json) return { serviceAnnotationDisallowedList: [], serviceLabelDisallowedList: [] };
  const list = (field: string, defaults: string[]): string[] => {
    const value = json[field];
    if (value === undefined || value === null) return [...defaults];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      throw new InputError(
        context('inferenceService', field),
        `expected a list of strings, got ${describeValue(value)}`,
      );
    }
    return [...defaults, ...value];
  };
  return {
    serviceAnnotationDisallowedList: list('serviceAnnotationDisallowedList', defaultAnnotationDisallowedList),
    serviceLabelDisallowedList: list('serviceLabelDisallowedList', defaultLabelDisallowedList),
  };
}
