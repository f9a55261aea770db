/**
 * The typed specs of every kind kfmesh reads, and the accessors that read them. Every module reads a
 * `spec`, `status` or `data` through `specOf`, `statusOf` or `dataOf`, never with a cast of its own.
 *
 * The Istio and Gateway API types are generated at build time from the same CRDs kfmesh checks its input
 * against (scripts/build-types.mjs, into generated/crd-specs.ts); kfmesh's own are written here for the
 * kinds it reads a few fields of (KServe's, Kubeflow's). The check itself runs wherever a
 * snapshot is made (load/snapshot.ts, load/schema.ts), whatever the objects' source: one with a field of
 * the wrong type is left out and reported with file, line, object and field, so the objects these
 * accessors see have the shapes the types say. What the accessors add is the
 * part no schema check can: an object of another kind than the caller expects is a programming error, and
 * a missing spec reads as an empty one.
 */
import type * as Crd from './generated/crd-specs.ts';
import { groupOf, isPlainObject, type KubeObject } from './object.ts';
import { GroupKind } from './vocabulary.ts';

/**
 * Every field optional, at every depth. (Written without distributing over unions: the distributive form
 * made the type checker build two million types, 70 s per build.) The schema check checks types, not
 * `required`, so a reader must not take a required field for given.
 */
export type Loose<T> = [T] extends [readonly (infer E)[]]
  ? Loose<E>[]
  : [T] extends [object]
    ? string extends keyof T
      ? { [K in keyof T]: Loose<T[K]> } // a map (labels, annotations): its values stay as they are
      : { [K in keyof T]?: Loose<Exclude<T[K], undefined>> }
    : T;

export type AuthorizationPolicySpec = Loose<Crd.AuthorizationPolicySpec>;
export type AuthorizationRule = NonNullable<AuthorizationPolicySpec['rules']>[number];
export type PolicyTargetRef = NonNullable<AuthorizationPolicySpec['targetRef']>;
export type PeerAuthenticationSpec = Loose<Crd.PeerAuthenticationSpec>;
export type RequestAuthenticationSpec = Loose<Crd.RequestAuthenticationSpec>;
export type IstioGatewaySpec = Loose<Crd.IstioGatewaySpec>;
export type IstioServer = NonNullable<IstioGatewaySpec['servers']>[number];
export type ServiceEntrySpec = Loose<Crd.ServiceEntrySpec>;
export type SidecarSpec = Loose<Crd.SidecarSpec>;
export type VirtualServiceSpec = Loose<Crd.VirtualServiceSpec>;
export type GatewaySpec = Loose<Crd.GatewaySpec>;
export type GatewayListener = NonNullable<GatewaySpec['listeners']>[number];
export type HTTPRouteSpec = Loose<Crd.HTTPRouteSpec>;
export type ReferenceGrantSpec = Loose<Crd.ReferenceGrantSpec>;
/** TLS settings of a DestinationRule (networking.istio.io/v1 ClientTLSSettings): the part kfmesh reads. */
export interface ClientTls {
  mode?: string;
  caCertificates?: string;
  credentialName?: string;
  [field: string]: unknown;
}

/** A DestinationRule traffic policy: the part kfmesh reads. */
export interface TrafficPolicy {
  tls?: ClientTls;
  portLevelSettings?: { port?: { number?: number }; tls?: ClientTls; [field: string]: unknown }[];
  [field: string]: unknown;
}

/**
 * networking.istio.io/v1 DestinationRule: written here, not generated from its CRD, whose full type
 * (every traffic policy field, three times over) made the type checker build two million types when
 * loosened (measured with the type a model package generated: 70 s and 3.4 GB per build, against 6 s).
 */
export interface DestinationRuleSpec {
  host?: string;
  exportTo?: string[];
  workloadSelector?: { matchLabels?: Record<string, string> };
  trafficPolicy?: TrafficPolicy;
  subsets?: { name?: string; labels?: Record<string, string>; trafficPolicy?: TrafficPolicy }[];
  [field: string]: unknown;
}

/*
 * Kubernetes' own kinds: the parts kfmesh reads, written here rather than taken from kubernetes-models,
 * whose types are far larger than what kfmesh reads. Fields not listed pass through untouched
 * (`[field: string]: unknown`).
 */

/** A container of a pod (core/v1 Container). */
export interface Container {
  name?: string;
  image?: string;
  args?: string[];
  ports?: { name?: string; containerPort?: number; protocol?: string }[];
  env?: { name?: string; value?: string; [field: string]: unknown }[];
  securityContext?: SecurityContext;
  [field: string]: unknown;
}

/** core/v1 (Pod)SecurityContext: the part kfmesh reads. */
export interface SecurityContext {
  runAsUser?: number;
  [field: string]: unknown;
}

/** core/v1 PodSpec. */
export interface PodSpec {
  serviceAccountName?: string;
  serviceAccount?: string;
  /** With `subdomain` naming a headless Service: DNS `<hostname>.<subdomain>.<ns>.svc.<cd>`. */
  hostname?: string;
  subdomain?: string;
  containers?: Container[];
  initContainers?: Container[];
  securityContext?: SecurityContext;
  /** The node the pod runs on. */
  nodeName?: string;
  [field: string]: unknown;
}

/** core/v1 PodStatus. */
export interface PodStatus {
  podIP?: string;
  podIPs?: { ip?: string }[];
  [field: string]: unknown;
}

/** core/v1 ServiceSpec. */
export interface ServiceSpec {
  type?: string;
  clusterIP?: string;
  externalName?: string;
  selector?: Record<string, string>;
  ports?: {
    name?: string;
    port?: number;
    targetPort?: number | string;
    protocol?: string;
    appProtocol?: string;
  }[];
  [field: string]: unknown;
}

/** networking.k8s.io/v1 IngressBackend. */
export interface IngressBackend {
  service?: { name?: string; port?: { number?: number; name?: string } };
  resource?: unknown;
}

/** networking.k8s.io/v1 IngressSpec. */
export interface IngressSpec {
  ingressClassName?: string;
  defaultBackend?: IngressBackend;
  tls?: { hosts?: string[]; secretName?: string }[];
  rules?: {
    host?: string;
    http?: { paths?: { path?: string; pathType?: string; backend?: IngressBackend }[] };
  }[];
  [field: string]: unknown;
}

/** networking.k8s.io/v1 IngressClassSpec. */
export interface IngressClassSpec {
  controller?: string;
  [field: string]: unknown;
}

/** meta/v1 LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key?: string; operator?: string; values?: string[] }[];
}

/** A peer of a NetworkPolicy rule (networking.k8s.io/v1 NetworkPolicyPeer). */
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr?: string; except?: string[] };
}

/** A port of a NetworkPolicy rule (networking.k8s.io/v1 NetworkPolicyPort). */
export interface NetworkPolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

/** networking.k8s.io/v1 NetworkPolicySpec. */
export interface NetworkPolicySpec {
  podSelector?: LabelSelector;
  policyTypes?: string[];
  ingress?: { from?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[];
  egress?: { to?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[];
  [field: string]: unknown;
}

/** A pod template (core/v1 PodTemplateSpec). */
export interface PodTemplate {
  metadata?: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  spec?: PodSpec;
}

/** The spec of a Deployment, StatefulSet, DaemonSet, ReplicaSet or Job: the part kfmesh reads, its pod template. */
export interface WorkloadSpec {
  /** The pods it owns (a Job's may be left to the controller). */
  selector?: LabelSelector;
  template?: PodTemplate;
  /** A StatefulSet's governing (headless) Service, under which its pods get DNS names. */
  serviceName?: string;
  [field: string]: unknown;
}

/** A Kubeflow Profile's spec (kubeflow.org/v1): the part kfmesh reads. */
export interface ProfileSpec {
  owner?: { kind?: string; name?: string };
}

/** The part kfmesh reads of policies it does not otherwise model (Telemetry, WasmPlugin): what they select. */
export interface SelectingPolicySpec {
  selector?: { matchLabels?: Record<string, string> };
  targetRef?: PolicyTargetRef;
  targetRefs?: PolicyTargetRef[];
  [field: string]: unknown;
}

/** An EnvoyFilter's spec: the part kfmesh reads, the proxies it applies to. */
export interface EnvoyFilterSpec {
  workloadSelector?: { labels?: Record<string, string> };
  targetRefs?: PolicyTargetRef[];
  [field: string]: unknown;
}

/** A cert-manager Certificate's spec: the part kfmesh reads, the Secret it writes. */
export interface CertificateSpec {
  secretName?: string;
  [field: string]: unknown;
}

/** The specs kfmesh reads, by `group/Kind` (the core group is empty: `/Service`). */
export interface Specs {
  'security.istio.io/AuthorizationPolicy': AuthorizationPolicySpec;
  'security.istio.io/PeerAuthentication': PeerAuthenticationSpec;
  'security.istio.io/RequestAuthentication': RequestAuthenticationSpec;
  'telemetry.istio.io/Telemetry': SelectingPolicySpec;
  'extensions.istio.io/WasmPlugin': SelectingPolicySpec;
  'networking.istio.io/DestinationRule': DestinationRuleSpec;
  'networking.istio.io/Gateway': IstioGatewaySpec;
  'networking.istio.io/ServiceEntry': ServiceEntrySpec;
  'networking.istio.io/Sidecar': SidecarSpec;
  'networking.istio.io/EnvoyFilter': EnvoyFilterSpec;
  'networking.istio.io/VirtualService': VirtualServiceSpec;
  'gateway.networking.k8s.io/Gateway': GatewaySpec;
  'gateway.networking.k8s.io/HTTPRoute': HTTPRouteSpec;
  'gateway.networking.k8s.io/ReferenceGrant': ReferenceGrantSpec;
  'networking.k8s.io/Ingress': IngressSpec;
  'networking.k8s.io/IngressClass': IngressClassSpec;
  'networking.k8s.io/NetworkPolicy': NetworkPolicySpec;
  '/Pod': PodSpec;
  '/Service': ServiceSpec;
  'apps/Deployment': WorkloadSpec;
  'apps/StatefulSet': WorkloadSpec;
  'apps/DaemonSet': WorkloadSpec;
  'apps/ReplicaSet': WorkloadSpec;
  'batch/Job': WorkloadSpec;
  'kubeflow.org/Profile': ProfileSpec;
  'cert-manager.io/Certificate': CertificateSpec;
}

/** The statuses kfmesh reads. */
export interface Statuses {
  '/Pod': PodStatus;
  /** The addresses istiod allocated to a ServiceEntry without its own (Istio 1.23 and later). */
  'networking.istio.io/ServiceEntry': { addresses?: { value?: string }[]; [field: string]: unknown };
}

/** `group/Kind` of an object. */
function groupKindOf(object: KubeObject): string {
  return `${groupOf(object.apiVersion)}/${object.kind}`;
}

/** True when the object is of the kind. */
export function isKind<K extends keyof Specs>(object: KubeObject | undefined, kind: K): object is KubeObject {
  return object !== undefined && groupKindOf(object) === kind;
}

/** The class of a Gateway API Gateway (undefined for anything else, or none given). */
export function gatewayClassOf(object: KubeObject | undefined): string | undefined {
  return isKind(object, 'gateway.networking.k8s.io/Gateway')
    ? specOf(object, 'gateway.networking.k8s.io/Gateway').gatewayClassName
    : undefined;
}

const workloadKinds = new Set([
  'apps/Deployment',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'apps/ReplicaSet',
  'batch/Job',
]);

/** The spec of a Deployment, StatefulSet, DaemonSet, ReplicaSet or Job (empty for anything else). */
export function workloadSpecOf(owner: KubeObject): WorkloadSpec {
  return workloadKinds.has(groupKindOf(owner)) ? part(owner, 'spec', groupKindOf(owner)) : {};
}

/** The pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet or Job (empty for anything else). */
export function podTemplateOf(owner: KubeObject): NonNullable<WorkloadSpec['template']> {
  if (!workloadKinds.has(groupKindOf(owner))) return {};
  const spec: WorkloadSpec = part(owner, 'spec', groupKindOf(owner));
  return isPlainObject(spec.template) ? spec.template : {};
}

/** A programming error: an object handed to an accessor of another kind. */
class WrongKindError extends Error {
  override name = 'WrongKindError';
}

function part(object: KubeObject, field: 'spec' | 'status', kind: string): Record<string, unknown> {
  const actual = groupKindOf(object);
  if (actual !== kind)
    throw new WrongKindError(`read the ${field} of ${kind} from ${actual} ${object.metadata.name}`);
  const value = object[field];
  return isPlainObject(value) ? value : {};
}

/**
 * The spec of an object of `kind` (empty when it has none). The object was checked against the kind's
 * schema when it was loaded, so the spec has the type's shape.
 */
export function specOf<K extends keyof Specs>(object: KubeObject, kind: K): Specs[K] {
  return part(object, 'spec', kind) as Specs[K];
}

/** The spec when the object is there and of the kind, else an empty one. */
export function specIfKind<K extends keyof Specs>(
  object: KubeObject | undefined,
  kind: K,
): Partial<Specs[K]> {
  return isKind(object, kind) ? specOf(object, kind) : {};
}

/** The status of an object of `kind` (empty when it has none). */
export function statusOf<K extends keyof Statuses>(object: KubeObject, kind: K): Statuses[K] {
  return part(object, 'status', kind) as Statuses[K];
}

/**
 * An object's spec or status as a tree of JSON values, whatever its kind: for code that walks every
 * object alike (the strings a configuration names, the annotations it carries), not for reading a field
 * of a known kind, which `specOf` and `statusOf` type. Empty when the object has none.
 */
export function fieldsOf(object: KubeObject, field: 'spec' | 'status'): Readonly<Record<string, unknown>> {
  const value = object[field];
  return isPlainObject(value) ? value : {};
}

/** A ConfigMap's `data`: every key a string (the schema check saw to it); empty when it has none. */
export function dataOf(configMap: KubeObject | undefined): Readonly<Record<string, string>> {
  if (!configMap) return {};
  const actual = groupKindOf(configMap);
  if (actual !== '/ConfigMap')
    throw new WrongKindError(`read the data of a ConfigMap from ${actual} ${configMap.metadata.name}`);
  const data = configMap['data'];
  if (!isPlainObject(data)) return {};
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) if (typeof value === 'string') out[key] = value;
  return out;
}

/**
 * A Secret's values as the API server stores them: `data` decoded from base64 (as binary strings), with
 * `stringData` written over it. A `data` value that is not base64 comes back as `null`.
 */
export function secretDataOf(secret: KubeObject): Readonly<Record<string, string | null>> {
  const actual = groupKindOf(secret);
  if (actual !== '/Secret')
    throw new WrongKindError(`read the data of a Secret from ${actual} ${secret.metadata.name}`);
  const out: Record<string, string | null> = {};
  const data = secret['data'];
  if (isPlainObject(data))
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string') continue;
      try {
        out[key] = atob(value.replace(/\s+/g, ''));
      } catch {
        out[key] = null;
      }
    }
  const stringData = secret['stringData'];
  if (isPlainObject(stringData))
    for (const [key, value] of Object.entries(stringData)) if (typeof value === 'string') out[key] = value;
  return out;
}

/** A webhook of an admissionregistration.k8s.io/v1 webhook configuration: the part kfmesh reads. */
export interface Webhook {
  name?: string;
  clientConfig?: {
    service?: { namespace?: string; name?: string; path?: string; port?: number };
    url?: string;
  };
  [field: string]: unknown;
}

/**
 * The webhooks of a ValidatingWebhookConfiguration or MutatingWebhookConfiguration (top-level `webhooks`,
 * checked against the schema when loaded); empty when it has none.
 */
export function webhooksOf(configuration: KubeObject): readonly Webhook[] {
  const actual = groupKindOf(configuration);
  if (
    actual !== GroupKind.ValidatingWebhookConfiguration &&
    actual !== GroupKind.MutatingWebhookConfiguration
  )
    throw new WrongKindError(
      `read the webhooks of a webhook configuration from ${actual} ${configuration.metadata.name}`,
    );
  const webhooks = configuration['webhooks'];
  return Array.isArray(webhooks) ? (webhooks.filter(isPlainObject) as Webhook[]) : [];
}
