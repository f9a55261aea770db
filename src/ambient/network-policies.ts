/**
 * Migration phase: NetworkPolicies (docs/semantics.md, NetworkPolicy). The CNI keeps enforcing them on
 * the wire after the migration, where the traffic now looks different: the ingress gateway's pods are
 * the converted gateway's, in its namespace, and ambient pods receive mesh traffic over HBONE on 15008.
 * A peer that took the old gateway's pods (as sources of ingress, or destinations of egress) takes the
 * converted gateway's pods too, and a rule that limits the ports of pods going ambient admits 15008. Each
 * change is in the report.
 */
import type { KubeObject } from '../model/object.ts';
import { specOf, type NetworkPolicyPeer, type NetworkPolicySpec } from '../model/specs.ts';
import { Label, GroupKind } from '../model/vocabulary.ts';
import { peerMatchesPod } from '../mesh/network-policy.ts';
import { HboneTargetPort } from '../mesh/trace/network.ts';
import type { Workload } from '../mesh/workloads.ts';
import { step, type Facts, type Step } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import { changed } from './migration-report.ts';

/** Converts every NetworkPolicy whose traffic the migration changes. */
export function networkPolicies(
  facts: Pick<Facts, 'input' | 'scope' | 'gateways'>,
  output: OutputView,
): Phase {
  const m = step(facts, output);
  for (const policy of m.input.snapshot.list(GroupKind.NetworkPolicy)) {
    const spec = specOf(policy, 'networking.k8s.io/NetworkPolicy');
    const namespace = policy.metadata.namespace ?? 'default';
    const ingress = (spec.ingress ?? []).map((rule, r) => ({
      ...rule,
      ...(rule.from
        ? { from: withNewGateways(m, policy, namespace, rule.from, `spec.ingress[${r}].from`) }
        : {}),
      ...(rule.ports &&
      selectsPodsGoingAmbient(m, policy, spec) &&
      !rule.ports.some((p) => p.port === HboneTargetPort)
        ? { ports: withHbone(m, policy, rule.ports, r) }
        : {}),
    }));
    // Egress: a rule that let the policy's pods reach the old gateway's pods lets them reach the new ones.
    const egress = spec.egress?.map((rule, r) =>
      rule.to
        ? { ...rule, to: withNewGateways(m, policy, namespace, rule.to, `spec.egress[${r}].to`) }
        : rule,
    );
    if (
      JSON.stringify(ingress) === JSON.stringify(spec.ingress ?? []) &&
      JSON.stringify(egress) === JSON.stringify(spec.egress)
    )
      continue;
    const current = m.draft.current(policy);
    m.draft.change(policy, { ...current, spec: { ...spec, ingress, ...(egress ? { egress } : {}) } });
  }
  return m.draft.done();
}

/** The peers of one rule, each that matched an old gateway's pods followed by one for the converted gateway's. */
function withNewGateways(
  m: Step<'input' | 'scope' | 'gateways'>,
  policy: KubeObject,
  namespace: string,
  peers: NetworkPolicyPeer[],
  field: string,
): NetworkPolicyPeer[] {
  return peers.flatMap((peer) => {
    const gateways = [...m.gateways.newGateways.values()].filter((g) =>
      g.pods.some((pod) => peerMatchesPod(peer, namespace, pod, namespaceLabels(m, pod))),
    );
    const added = gateways.map((g): NetworkPolicyPeer => ({
      namespaceSelector: { matchLabels: { [Label.MetadataName]: g.namespace } },
      podSelector: { matchLabels: { [Label.GatewayName]: g.name } },
    }));
    for (const g of gateways)
      m.draft.note(
        policy,
        changed(
          field,
          `takes the pods of the converted gateway ${g.namespace}/${g.name} (Deployment ${g.name}-istio) as it took the old gateway's`,
        ),
      );
    return [peer, ...added];
  });
}

function withHbone(
  m: Step<'input' | 'scope' | 'gateways'>,
  policy: KubeObject,
  ports: NonNullable<NetworkPolicySpec['ingress']>[number]['ports'],
  rule: number,
) {
  m.draft.note(
    policy,
    changed(
      `spec.ingress[${rule}].ports`,
      `admits ${HboneTargetPort}/TCP too: in ambient mode ztunnel brings mesh traffic to the pod over HBONE on that port`,
    ),
  );
  return [...(ports ?? []), { protocol: 'TCP', port: HboneTargetPort }];
}

/** Whether the policy selects pods that run with sidecars now and in ambient mode after the migration. */
function selectsPodsGoingAmbient(
  m: Step<'input' | 'scope' | 'gateways'>,
  policy: KubeObject,
  spec: NetworkPolicySpec,
): boolean {
  const namespace = policy.metadata.namespace ?? 'default';
  return (m.scope.sidecarPods().get(namespace) ?? []).some((w) =>
    peerMatchesPod({ podSelector: spec.podSelector ?? {} }, namespace, w, namespaceLabels(m, w)),
  );
}

function namespaceLabels(
  m: Step<'input' | 'scope' | 'gateways'>,
  pod: Workload,
): Readonly<Record<string, string>> {
  return m.input.snapshot.get(GroupKind.Namespace, '', pod.namespace)?.metadata.labels ?? {};
}
