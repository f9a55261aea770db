/**
 * A Kubeflow Profile's mesh objects (docs/semantics.md, Kubeflow). Sidecar mode: the namespace
 * labels and the owner policy `ns-owner-access-istio` exactly as the profile controller writes them.
 * Ambient mode: the namespace enrolled with a waypoint of its own, the owner policy attached to that
 * waypoint with `targetRefs` (under a name the profile controller does not rewrite), and the L4
 * policy that only lets the waypoint (and the namespace itself) reach the pods, so nothing bypasses
 * the L7 policy.
 */
import { specOf } from '../model/specs.ts';
import type { KubeObject } from '../model/object.ts';
import { inventedMeta, ownerReferenceTo } from '../model/ownership.ts';
import { waypointFor } from './waypoint.ts';
import type { KubeflowConfig } from './config.ts';
import { Label, GroupKind, Group } from '../model/vocabulary.ts';
import { gatewayServiceAccount, principalOf } from '../model/identity.ts';
import type { Snapshot } from '../load/snapshot.ts';

/** The profile controller's owner policy name. */
export const OwnerPolicyName = 'ns-owner-access-istio';
/**
 * The owner policy on the waypoint, under a name of kfmesh's: the profile controller rewrites
 * `ns-owner-access-istio` to its sidecar form on every reconcile (docs/semantics.md, Kubeflow), so the
 * waypoint form written under that name would be reverted, leaving the waypoint without a policy.
 */
export const WaypointOwnerPolicyName = 'ns-owner-access-waypoint';
/** The L4 policy that admits the waypoint (the name KEP-2676's proof of concept uses). */
const WaypointL4PolicyName = 'ns-l4-waypoint';

/**
 * Whether a policy is the profile controller's owner policy, which that controller rewrites to its own
 * form on every reconcile: its name, in a Profile's namespace or with the `user` annotation the
 * controller writes (an export of a cluster may hold the namespace and not the Profile).
 */
export function isProfileOwnerPolicy(snapshot: Snapshot, policy: KubeObject): boolean {
  const namespace = policy.metadata.namespace ?? '';
  return (
    policy.kind === 'AuthorizationPolicy' &&
    policy.metadata.name === OwnerPolicyName &&
    (snapshot.get(GroupKind.Profile, '', namespace) !== undefined ||
      policy.metadata.annotations?.['user'] !== undefined)
  );
}

/**
 * Whether a namespace is a user's: a Profile of its name, or the profile controller's label on it (an export
 * of a cluster may hold the namespace and not the Profile).
 */
export function isProfileNamespace(snapshot: Snapshot, namespace: KubeObject): boolean {
  return (
    snapshot.get(GroupKind.Profile, '', namespace.metadata.name ?? '') !== undefined ||
    namespace.metadata.labels?.[Label.AppPartOf] === 'kubeflow-profile'
  );
}

/** The Profile's owner (the user the namespace belongs to). */
function profileOwner(profile: KubeObject): string {
  return specOf(profile, 'kubeflow.org/Profile').owner?.name ?? '';
}

/**
 * The namespace labels of a Profile: the controller's defaults merged with the labels file (`""` removes).
 * In ambient mode `istio-injection` is set to `disabled` (as the Kubeflow profile controller's ambient mode
 * does) rather than left out: an apply can't remove a label another manager set, and an `enabled` one left
 * behind would put sidecars back into the namespace.
 */
function profileNamespaceLabels(config: KubeflowConfig, mode: 'sidecar' | 'ambient'): Record<string, string> {
  const labels: Record<string, string> =
    mode === 'sidecar'
      ? { [Label.IstioInjection]: 'enabled' }
      : {
          [Label.IstioInjection]: 'disabled',
          [Label.DataplaneMode]: 'ambient',
          [Label.UseWaypoint]: config.waypointName,
          [Label.IngressUseWaypoint]: 'true',
        };
  const removed = new Set(
    Object.entries(config.namespaceLabels)
      .filter(([, v]) => v === '')
      .map(([k]) => k),
  );
  // The mode's own labels win over the labels file (in ambient mode it may not turn injection back on).
  for (const [key, value] of Object.entries(config.namespaceLabels))
    if (value !== '' && !(key in labels)) labels[key] = value;
  return Object.fromEntries(
    Object.entries(labels).filter(
      ([k]) => !removed.has(k) || (mode === 'ambient' && k === Label.IstioInjection),
    ),
  );
}

/** The rules of the owner policy: the owner through the ingress or KFP UI, the namespace, probes, the kernel check. */
function ownerRules(
  profile: KubeObject,
  config: KubeflowConfig,
  ingressPrincipals: readonly string[],
): Record<string, unknown>[] {
  const namespace = profile.metadata.name ?? '';
  return [
    {
      when: [
        {
          key: `request.headers[${config.userIdHeader}]`,
          values: [`${config.userIdPrefix}${profileOwner(profile)}`],
        },
      ],
      from: [{ source: { principals: [...ingressPrincipals, config.kfpUiPrincipal] } }],
    },
    { when: [{ key: 'source.namespace', values: [namespace] }] },
    { to: [{ operation: { paths: ['/healthz', '/metrics', '/wait-for-drain'] } }] },
    {
      from: [{ source: { principals: [config.notebookControllerPrincipal] } }],
      to: [{ operation: { methods: ['GET'], paths: ['*/api/kernels'] } }],
    },
  ];
}

/** The mesh objects of a Profile in a mode. */
export function profileObjects(
  profile: KubeObject,
  config: KubeflowConfig,
  mode: 'sidecar' | 'ambient',
): KubeObject[] {
  const namespace = profile.metadata.name ?? '';
  const owner = profileOwner(profile);
  const owners = ownerReferenceTo(profile, namespace);
  const withOwners = (meta: KubeObject['metadata']): KubeObject['metadata'] =>
    owners ? { ...meta, ownerReferences: owners } : meta;
  const namespaceObject: KubeObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: withOwners({
      name: namespace,
      labels: profileNamespaceLabels(config, mode),
      annotations: { owner },
    }),
  };
  const policyMeta = (name: string) =>
    withOwners({ name, namespace, annotations: { user: owner, role: 'admin' } });
  if (mode === 'sidecar') {
    return [
      namespaceObject,
      {
        apiVersion: 'security.istio.io/v1beta1',
        kind: 'AuthorizationPolicy',
        metadata: policyMeta(OwnerPolicyName),
        spec: { action: 'ALLOW', rules: ownerRules(profile, config, [config.ingressGatewayPrincipal]) },
      },
    ];
  }
  const waypointAccount = gatewayServiceAccount(config.waypointName, true);
  const waypointPrincipal = principalOf({ namespace, serviceAccount: waypointAccount }, config.trustDomain);
  return [
    namespaceObject,
    waypointFor(namespace, config.waypointName, profile),
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: policyMeta(WaypointOwnerPolicyName),
      spec: {
        targetRefs: [{ group: Group.GatewayApi, kind: 'Gateway', name: config.waypointName }],
        action: 'ALLOW',
        // The ingress gateways the platform has: the Gateway API gateway of ambient mode, and the Istio
        // ingress gateway while it is still there.
        rules: ownerRules(profile, config, config.ambientIngressPrincipals),
      },
    },
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: inventedMeta(profile, WaypointL4PolicyName, namespace),
      spec: {
        action: 'ALLOW',
        // Enforced by ztunnel: the waypoint (which enforces the owner policy) and, as in sidecar mode, the
        // namespace's own workloads; traffic that skips the waypoint from elsewhere is refused.
        rules: [
          { from: [{ source: { principals: [waypointPrincipal] } }] },
          { from: [{ source: { namespaces: [namespace] } }] },
        ],
      },
    },
  ];
}
