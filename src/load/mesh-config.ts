/** Istio's mesh configuration, read from the ConfigMap `istio` (YAML in `data.mesh`) of the control plane. */
import { GroupKind } from '../model/vocabulary.ts';
import { dataOf } from '../model/specs.ts';
import { parseYaml } from './yaml.ts';
import { InputError, messageOf } from '../model/errors.ts';
import { isPlainObject, refOf, type KubeObject } from '../model/object.ts';
import type { Snapshot } from './snapshot.ts';
import { configMapOf, type ConfigMapInput } from '../model/inputs.ts';

/** How a sidecar treats destinations it has no service for. */
export const OutboundTrafficPolicy = { AllowAny: 'ALLOW_ANY', RegistryOnly: 'REGISTRY_ONLY' } as const;
export type OutboundTrafficPolicy = (typeof OutboundTrafficPolicy)[keyof typeof OutboundTrafficPolicy];

/** The mesh settings the data plane depends on. */
export interface MeshConfig {
  rootNamespace: string;
  trustDomain: string;
  outboundTrafficPolicy: OutboundTrafficPolicy;
  enableAutoMtls: boolean;
  /** `defaultVirtualServiceExportTo`, `defaultServiceExportTo`, `defaultDestinationRuleExportTo`. */
  defaultExportTo: { virtualService: string[]; service: string[]; destinationRule: string[] };
  /**
   * Sidecars injected under this config accept HBONE (`defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE:
   * "true"`, as Istio's ambient profile sets): the injector labels their pods `networking.istio.io/tunnel: http`.
   */
  sidecarsAcceptHbone: boolean;
  /**
   * Sidecars answer DNS and give ServiceEntries without addresses an address of their own
   * (`defaultConfig.proxyMetadata`: `ISTIO_META_DNS_CAPTURE` with `ISTIO_META_DNS_AUTO_ALLOCATE` or
   * `PILOT_ENABLE_IP_AUTOALLOCATE`).
   */
  dnsAutoAllocate: boolean;
  /**
   * Sidecars answer their application's DNS queries (`ISTIO_META_DNS_CAPTURE: "true"`): a ServiceEntry host
   * with an address resolves to it.
   */
  dnsCapture: boolean;
  /** Which Kubernetes Ingresses istiod serves, and on which gateway pods (`ingressControllerMode`, ...). */
  ingress: IngressSettings;
}

/** How istiod treats Kubernetes Ingress: `ingressControllerMode`, `ingressClass`, `ingressSelector`, `ingressService`. */
export interface IngressSettings {
  /** `OFF`: none; `STRICT`: only those of istiod's class; `DEFAULT`: also those with no class. */
  mode: 'OFF' | 'STRICT' | 'DEFAULT';
  className: string;
  selector: string;
  service: string;
}

/** The proxy metadata that makes injected sidecars accept HBONE. */
export const EnableHboneMetadata = 'ISTIO_META_ENABLE_HBONE';

/** Istio's defaults when no mesh config is given. */
const defaultMeshConfig: MeshConfig = {
  rootNamespace: 'istio-system',
  trustDomain: 'cluster.local',
  outboundTrafficPolicy: OutboundTrafficPolicy.AllowAny,
  enableAutoMtls: true,
  defaultExportTo: { virtualService: ['*'], service: ['*'], destinationRule: ['*'] },
  sidecarsAcceptHbone: false,
  dnsAutoAllocate: false,
  dnsCapture: false,
  ingress: { mode: 'STRICT', className: 'istio', selector: '', service: 'istio-ingressgateway' },
};

/** The ConfigMap istiod reads the mesh config from. */
export const MeshConfigMap = {
  name: 'istio',
  namespace: 'istio-system',
  reader: 'istiod',
} as const satisfies ConfigMapInput;

/** The ConfigMap that holds the mesh config (`istio`, in `istio-system` when there are several). */
export function meshConfigMap(snapshot: Snapshot): KubeObject | undefined {
  return configMapOf(MeshConfigMap, snapshot.list(GroupKind.ConfigMap));
}

/** Reads the mesh config from ConfigMap `istio` (in `istio-system` when there are several). */
export function meshConfigFrom(snapshot: Snapshot): MeshConfig {
  const configMap = meshConfigMap(snapshot);
  const text = dataOf(configMap)['mesh'];
  if (!configMap || text === undefined) return defaultMeshConfig;
  const fail = (field: string, message: string): never => {
    throw new InputError(
      {
        location: snapshot.locate(configMap, ['data', 'mesh']),
        object: refOf(configMap),
        field: `data.mesh: ${field}`,
      },
      message,
    );
  };
  let mesh: unknown;
  try {
    mesh = parseYaml(text);
  } catch (error) {
    return fail('(YAML)', `invalid YAML: ${messageOf(error).split('\n')[0] ?? ''}`);
  }
  if (mesh === null || mesh === undefined) return defaultMeshConfig;
  if (!isPlainObject(mesh)) return fail('(YAML)', 'expected a mapping');
  const str = (field: string, fallback: string): string => {
    const v = mesh[field];
    if (v === undefined || v === null) return fallback;
    return typeof v === 'string' ? v : fail(field, 'expected a string');
  };
  const policy = isPlainObject(mesh['outboundTrafficPolicy'])
    ? mesh['outboundTrafficPolicy']['mode']
    : undefined;
  if (policy !== undefined && policy !== 'ALLOW_ANY' && policy !== 'REGISTRY_ONLY') {
    fail('outboundTrafficPolicy.mode', `expected ALLOW_ANY or REGISTRY_ONLY, got ${JSON.stringify(policy)}`);
  }
  const ingressMode = str('ingressControllerMode', defaultMeshConfig.ingress.mode);
  if (ingressMode !== 'OFF' && ingressMode !== 'STRICT' && ingressMode !== 'DEFAULT')
    fail('ingressControllerMode', `expected OFF, STRICT or DEFAULT, got ${JSON.stringify(ingressMode)}`);
  const list = (field: string): string[] => {
    const v = mesh[field];
    if (v === undefined || v === null) return ['*'];
    return Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? (v as string[])
      : fail(field, 'expected a list of strings');
  };
  return {
    rootNamespace: str('rootNamespace', defaultMeshConfig.rootNamespace),
    trustDomain: str('trustDomain', defaultMeshConfig.trustDomain),
    outboundTrafficPolicy: (policy as OutboundTrafficPolicy | undefined) ?? OutboundTrafficPolicy.AllowAny,
    enableAutoMtls: mesh['enableAutoMtls'] !== false,
    defaultExportTo: {
      virtualService: list('defaultVirtualServiceExportTo'),
      service: list('defaultServiceExportTo'),
      destinationRule: list('defaultDestinationRuleExportTo'),
    },
    sidecarsAcceptHbone: proxyMetadataOf(mesh)[EnableHboneMetadata] === 'true',
    dnsAutoAllocate: dnsAutoAllocates(proxyMetadataOf(mesh)),
    dnsCapture: proxyMetadataOf(mesh)['ISTIO_META_DNS_CAPTURE'] === 'true',
    ingress: {
      mode: ingressMode as IngressSettings['mode'],
      className: str('ingressClass', defaultMeshConfig.ingress.className),
      selector: str('ingressSelector', defaultMeshConfig.ingress.selector),
      service: str('ingressService', defaultMeshConfig.ingress.service),
    },
  };
}

function dnsAutoAllocates(metadata: Readonly<Record<string, string>>): boolean {
  return (
    metadata['ISTIO_META_DNS_CAPTURE'] === 'true' &&
    (metadata['ISTIO_META_DNS_AUTO_ALLOCATE'] === 'true' ||
      metadata['PILOT_ENABLE_IP_AUTOALLOCATE'] === 'true')
  );
}

/** `defaultConfig.proxyMetadata` of a parsed mesh config, values as strings (Istio reads them so). */
function proxyMetadataOf(mesh: Record<string, unknown>): Record<string, string> {
  const defaults = mesh['defaultConfig'];
  const metadata = isPlainObject(defaults) ? defaults['proxyMetadata'] : undefined;
  if (!isPlainObject(metadata)) return {};
  return Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, String(value)]));
}
