/**
 * mTLS: the effective PeerAuthentication of a workload port, the TLS a client uses toward a destination
 * (DestinationRule first, then auto-mTLS), and SPIFFE identities (docs/semantics.md, mTLS and identity).
 */
import { GroupKind } from '../model/vocabulary.ts';
import { specOf } from '../model/specs.ts';
import { addTo } from '../model/multimap.ts';
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import { resolveShortName } from './virtual-services.ts';
import type { MeshConfig } from '../load/mesh-config.ts';
import type { MeshService } from './services.ts';
import type { Workload } from './workloads.ts';

/** PeerAuthentication modes. */
export const MtlsMode = { Strict: 'STRICT', Permissive: 'PERMISSIVE', Disable: 'DISABLE' } as const;
export type MtlsMode = (typeof MtlsMode)[keyof typeof MtlsMode];

/** The TLS a client sidecar or gateway originates toward an upstream. */
export interface UpstreamTls {
  mode: 'ISTIO_MUTUAL' | 'DISABLE' | 'SIMPLE' | 'MUTUAL';
  /** Why: the DestinationRule that set it, or auto-mTLS. */
  reason: string;
}

/** The security configuration of the mesh, indexed. */
export class SecurityPolicies {
  /** PeerAuthentications and DestinationRules by namespace, oldest first in each. */
  readonly #peerAuth = new Map<string, KubeObject[]>();
  readonly #destinationRules = new Map<string, KubeObject[]>();
  /** `peerAuthenticationMode` answers, by workload and target port (the configuration never changes). */
  readonly #modes = new Map<Workload, Map<number, { mode: MtlsMode; policy?: string }>>();
  readonly #mesh: MeshConfig;
  /** Each DestinationRule's host, resolved to an FQDN. */
  readonly #hosts = new Map<KubeObject, string>();

  constructor(snapshot: Snapshot, mesh: MeshConfig, clusterDomain: string) {
    const byAge = (a: KubeObject, b: KubeObject) => compareStrings(orderKey(a), orderKey(b));
    for (const pa of [...snapshot.list(GroupKind.PeerAuthentication)].sort(byAge))
      addTo(this.#peerAuth, pa.metadata.namespace ?? 'default', pa);
    const rules = [...snapshot.list(GroupKind.DestinationRule)].sort(byAge);
    this.#mesh = mesh;
    for (const dr of rules) {
      addTo(this.#destinationRules, dr.metadata.namespace ?? 'default', dr);
      // DestinationRule hosts are short names relative to the rule's namespace, as in VirtualServices.
      const spec = specOf(dr, 'networking.istio.io/DestinationRule');
      if (spec.host)
        this.#hosts.set(dr, resolveShortName(spec.host, dr.metadata.namespace ?? 'default', clusterDomain));
    }
  }

  /**
   * The effective mTLS mode of a workload port: workload policy (selector) > namespace > root namespace,
   * oldest first in each scope; UNSET inherits; port-level settings (by target port) override.
   */
  peerAuthenticationMode(workload: Workload, targetPort: number): { mode: MtlsMode; policy?: string } {
    let byPort = this.#modes.get(workload);
    if (!byPort) this.#modes.set(workload, (byPort = new Map()));
    let found = byPort.get(targetPort);
    if (!found) byPort.set(targetPort, (found = this.#effectiveMode(workload, targetPort)));
    return found;
  }

  #effectiveMode(workload: Workload, targetPort: number): { mode: MtlsMode; policy?: string } {
    const root = this.#mesh.rootNamespace;
    const own = this.#peerAuth.get(workload.namespace) ?? [];
    const paSpec = (pa: KubeObject) => specOf(pa, 'security.istio.io/PeerAuthentication');
    const selects = (pa: KubeObject) => {
      const labels = paSpec(pa).selector?.matchLabels;
      return labels !== undefined && labelsMatch(workload.labels, labels);
    };
    const hasSelector = (pa: KubeObject) => paSpec(pa).selector?.matchLabels !== undefined;
    const workloadPolicy =
      workload.namespace === root ? undefined : own.find((pa) => hasSelector(pa) && selects(pa));
    const namespacePolicy = own.find((pa) => !hasSelector(pa));
    const meshPolicy = this.#peerAuth.get(root)?.find((pa) => !hasSelector(pa));
    let mode: MtlsMode = MtlsMode.Permissive;
    let policy: string | undefined;
    for (const pa of [meshPolicy, namespacePolicy, workloadPolicy]) {
      if (!pa) continue;
      const spec = paSpec(pa);
      const m = normalizeMode(spec.mtls?.mode);
      if (m) {
        mode = m;
        policy = `${pa.metadata.namespace}/${pa.metadata.name}`;
      }
      const portMode = normalizeMode(spec.portLevelMtls?.[String(targetPort)]?.mode);
      if (pa === workloadPolicy && portMode) {
        mode = portMode;
        policy = `${pa.metadata.namespace}/${pa.metadata.name} (port ${targetPort})`;
      }
    }
    return policy === undefined ? { mode } : { mode, policy };
  }

  /**
   * The TLS a proxy in `clientNamespace` originates to `service:port` (subset optional): the DestinationRule's
   * setting when one applies (client namespace, then the service's, then the root namespace; most specific
   * host), else auto-mTLS (mTLS iff the endpoint carries `security.istio.io/tlsMode=istio` and its port is not DISABLE).
   */
  upstreamTls(
    clientNamespace: string,
    service: MeshService | undefined,
    host: string,
    port: number,
    subset: string | undefined,
    endpoint: Workload | undefined,
    endpointPort: number,
  ): UpstreamTls {
    const rule = this.destinationRuleFor(clientNamespace, service?.namespace, host);
    if (rule) {
      const spec = specOf(rule, 'networking.istio.io/DestinationRule');
      const subsetTls = subset ? spec.subsets?.find((s) => s.name === subset)?.trafficPolicy?.tls : undefined;
      const portTls = spec.trafficPolicy?.portLevelSettings?.find((p) => p.port?.number === port)?.tls;
      const tls = subsetTls ?? portTls ?? spec.trafficPolicy?.tls;
      const mode = tls?.mode;
      if (mode === 'ISTIO_MUTUAL' || mode === 'DISABLE' || mode === 'SIMPLE' || mode === 'MUTUAL') {
        return { mode, reason: `DestinationRule ${rule.metadata.namespace}/${rule.metadata.name}` };
      }
    }
    if (!this.#mesh.enableAutoMtls) return { mode: 'DISABLE', reason: 'auto-mTLS off' };
    if (!endpoint || !endpoint.tlsModeIstio)
      return {
        mode: 'DISABLE',
        reason: 'auto-mTLS: endpoint has no sidecar label security.istio.io/tlsMode=istio',
      };
    if (this.peerAuthenticationMode(endpoint, endpointPort).mode === MtlsMode.Disable)
      return { mode: 'DISABLE', reason: 'auto-mTLS: destination PeerAuthentication DISABLE' };
    return { mode: 'ISTIO_MUTUAL', reason: 'auto-mTLS' };
  }

  /** The DestinationRule that applies to `host` for a client namespace, if any. */
  destinationRuleFor(
    clientNamespace: string,
    serviceNamespace: string | undefined,
    host: string,
  ): KubeObject | undefined {
    if (this.#destinationRules.size === 0) return undefined;
    const namespaces = [clientNamespace, serviceNamespace, this.#mesh.rootNamespace].filter(
      (n): n is string => n !== undefined,
    );
    for (const ns of namespaces) {
      const inNamespace = this.#destinationRules.get(ns);
      if (!inNamespace) continue;
      const candidates = inNamespace.filter((dr) => {
        const spec = specOf(dr, 'networking.istio.io/DestinationRule');
        const exportTo = spec.exportTo ?? this.#mesh.defaultExportTo.destinationRule;
        const visible =
          exportTo.includes('*') ||
          exportTo.includes(clientNamespace) ||
          (exportTo.includes('.') && ns === clientNamespace);
        const ruleHost = this.#hosts.get(dr);
        return visible && ruleHost !== undefined && hostMatches(ruleHost, host);
      });
      if (candidates.length === 0) continue;
      return candidates.sort(
        (a, b) => specificity(this.#hosts.get(b) ?? '') - specificity(this.#hosts.get(a) ?? ''),
      )[0];
    }
    return undefined;
  }
}

function normalizeMode(mode: string | undefined): MtlsMode | undefined {
  return mode === 'STRICT' || mode === 'PERMISSIVE' || mode === 'DISABLE' ? mode : undefined;
}

/** Does a config host (`*`, `*.suffix`, exact) cover a concrete host? */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

function specificity(pattern: string): number {
  return pattern.startsWith('*') ? pattern.length - 1 : 1000 + pattern.length;
}
