/**
 * KFM210: a policy (AuthorizationPolicy, RequestAuthentication, Telemetry, WasmPlugin) that picks the pods
 * of a Gateway API gateway or waypoint by label instead of `targetRefs` (docs/semantics.md, Authorization on
 * sidecars and gateways). A waypoint never takes a selector policy: it does nothing there. A gateway takes
 * it only while istiod keeps `ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY` on (the default), and Istio may
 * drop that fallback; `targetRefs` naming the Gateway is the form that stays.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type SelectingPolicySpec } from '../../model/specs.ts';
import { GroupKind, Label, Group } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { addTo } from '../../model/multimap.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const kinds = [
  [Group.IstioSecurity, 'AuthorizationPolicy', GroupKind.AuthorizationPolicy],
  [Group.IstioSecurity, 'RequestAuthentication', GroupKind.RequestAuthentication],
  ['telemetry.istio.io', 'Telemetry', GroupKind.Telemetry],
  ['extensions.istio.io', 'WasmPlugin', GroupKind.WasmPlugin],
] as const;

export const selectorOnGatewayApiPods: Rule = {
  code: 'KFM210',
  name: 'selector-on-gateway-api-pods',
  severity: Severity.Warning,
  description:
    "a policy that selects a Gateway API gateway's or waypoint's pods by label: a waypoint ignores it, a gateway takes it only by a fallback istiod may turn off",
  reads: [
    GroupKind.AuthorizationPolicy,
    GroupKind.RequestAuthentication,
    GroupKind.Telemetry,
    GroupKind.WasmPlugin,
  ],
  istio: [{ analyzer: 'k8sgateway.SelectorAnalyzer', code: 'IST0166' }],
  check(context: AnalyzeContext): Finding[] {
    const pods = new Map<string, Workload[]>();
    for (const w of context.mesh().workloads)
      if (w.labels[Label.GatewayName] !== undefined) addTo(pods, w.namespace, w);
    if (pods.size === 0) return [];
    return kinds.flatMap(([group, kind, key]) =>
      context.snapshot.list(`${group}/${kind}`).flatMap((policy) => {
        const spec: SelectingPolicySpec = specOf(policy, key);
        const selector = spec.selector?.matchLabels;
        if (!selector || spec.targetRef !== undefined || (spec.targetRefs?.length ?? 0) > 0) return [];
        const selected = (pods.get(policy.metadata.namespace ?? 'default') ?? []).filter((w) =>
          labelsMatch(w.labels, selector),
        );
        const first = selected[0];
        if (!first) return [];
        const gateway = first.labels[Label.GatewayName] ?? first.name;
        const waypoint = selected.some((w) => w.proxy === ProxyKind.Waypoint);
        const finding = findingOf(
          selectorOnGatewayApiPods,
          context,
          policy,
          ['spec', 'selector'],
          waypoint
            ? `selects the pods of waypoint ${gateway} by label: waypoints take only policies that name them in targetRefs, so this one does nothing there`
            : `selects the pods of Gateway API gateway ${gateway} by label: it applies only while istiod keeps ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY on`,
          {
            fix: `replace the selector with targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: ${gateway}}]`,
          },
        );
        return [waypoint ? finding : { ...finding, severity: Severity.Info }];
      }),
    );
  },
};
