/**
 * What a platform with namespaces in both modes needs (docs/semantics.md, Sidecars and ambient pods together). Ambient clients
 * reach sidecar workloads with an identity only when sidecars accept HBONE (proxy metadata
 * `ISTIO_META_ENABLE_HBONE`); sidecar clients never pass through a waypoint, so an ambient Profile's L4
 * policy refuses callers its owner policy names when they run with sidecars. These are installation and
 * mode choices, not objects kfmesh owns, so they come out as findings that say what to change.
 */
import { accountOfPrincipal } from '../model/identity.ts';
import { meshConfigFrom } from '../load/mesh-config.ts';
import type { Finding } from '../model/finding.ts';
import { refOf, type KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { KubeflowConfig } from './config.ts';

/** Finding codes. */
export const AmbientToSidecarWithoutHbone = 'KFM302';
export const SidecarCallerSkipsWaypoint = 'KFM303';

/** Findings for a platform whose namespaces run in both modes. */
export function mixedModeFindings(
  snapshot: Snapshot,
  config: KubeflowConfig,
  runsSidecars: (namespace: string) => boolean,
  ambientProfiles: readonly KubeObject[],
  anySidecar: boolean,
): Finding[] {
  const findings: Finding[] = [];
  if (ambientProfiles.length > 0 && anySidecar && !meshConfigFrom(snapshot).sidecarsAcceptHbone) {
    const first = ambientProfiles[0] as KubeObject;
    findings.push({
      code: AmbientToSidecarWithoutHbone,
      severity: 'warning',
      object: refOf(first),
      message:
        'namespaces run in both modes, but sidecars do not accept HBONE: ambient clients reach sidecar workloads in plaintext, without an identity, so STRICT mTLS refuses them and policies on principals deny them',
      fix: 'set meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE: "true" (as Istio’s ambient profile does) and restart the sidecar workloads',
    });
  }
  const namespaceOf = (principal: string) => accountOfPrincipal(principal)?.namespace;
  for (const profile of ambientProfiles) {
    for (const [caller, principal] of [
      ['the KFP UI', config.kfpUiPrincipal],
      ['the notebook controller', config.notebookControllerPrincipal],
    ] as const) {
      const namespace = namespaceOf(principal);
      if (!namespace || !runsSidecars(namespace)) continue;
      findings.push({
        code: SidecarCallerSkipsWaypoint,
        severity: 'warning',
        object: refOf(profile),
        field: 'ns-owner-access-istio',
        message: `${caller} (${principal}) runs with a sidecar in namespace ${namespace}; sidecars send straight to ambient pods, skipping the waypoint that enforces the owner policy, so ztunnel's L4 policy refuses it`,
        fix: `move namespace ${namespace} to ambient mode (\`kfmesh migrate --to ambient\` converts it), or keep this Profile in sidecar mode`,
      });
    }
  }
  return findings;
}
