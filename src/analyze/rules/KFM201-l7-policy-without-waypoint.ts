/**
 * KFM201: an AuthorizationPolicy that ztunnel cannot enforce whole selects pods in ambient mode. ztunnel,
 * which enforces selector-based policies there, can't read HTTP: it drops an ALLOW rule with HTTP
 * conditions (an ALLOW with only such rules refuses every connection) and a DENY rule's HTTP conditions
 * never match; and it does not run CUSTOM or AUDIT policies at all (docs/semantics.md, ztunnel).
 */
import { addTo } from '../../model/multimap.ts';
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { l7AttributesOf, waypointReasonsOf, WaypointOnlyActions } from '../../mesh/ambient.ts';
import { policySpec } from '../../mesh/authorization.ts';
import type { Workload } from '../../mesh/workloads.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import { tracedCall } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const l7PolicyWithoutWaypoint: Rule = {
  code: 'KFM201',
  name: 'l7-policy-without-waypoint',
  severity: Severity.Error,
  description:
    'an AuthorizationPolicy that ztunnel cannot enforce whole selects ambient pods: HTTP conditions (an L7-only ALLOW denies everything, L7 DENY rules never match) or a CUSTOM or AUDIT action, which ztunnel does not run',
  reads: [GroupKind.AuthorizationPolicy],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const root = mesh.config.rootNamespace;
    const findings: Finding[] = [];
    // Ambient pods by namespace: a policy selects pods of its own namespace (of every one from the root).
    const ambient = new Map<string, Workload[]>();
    for (const w of mesh.workloads) if (w.proxy === 'ambient') addTo(ambient, w.namespace, w);
    if (ambient.size === 0) return [];
    const everywhere = [...ambient.values()].flat();
    for (const policy of context.snapshot.list(GroupKind.AuthorizationPolicy)) {
      const spec = policySpec(policy);
      if (spec.targetRefs !== undefined || spec.targetRef !== undefined) continue;
      const ns = policy.metadata.namespace ?? 'default';
      const selector = spec.selector?.matchLabels;
      const pods = (ns === root ? everywhere : (ambient.get(ns) ?? [])).filter((w) =>
        Object.entries(selector ?? {}).every(([k, v]) => w.labels[k] === v),
      );
      if (pods.length === 0) continue;
      const reasons = waypointReasonsOf(spec);
      if (reasons.length === 0) continue;
      const rules = spec.rules ?? [];
      const l7 = rules.map((r, i) => [i, l7AttributesOf(r)] as const).filter(([, a]) => a.length > 0);
      const action = spec.action ?? 'ALLOW';
      const names = [...new Set(pods.map((p) => `${p.namespace}/${p.name}`))].slice(0, 5).join(', ');
      const effect = WaypointOnlyActions.has(action)
        ? action === 'CUSTOM'
          ? 'ztunnel does not run CUSTOM policies: its provider is never asked, and what it would refuse gets through'
          : 'ztunnel does not run AUDIT policies: nothing is audited'
        : action === 'ALLOW'
          ? l7.length === rules.length
            ? 'every rule uses HTTP attributes, so ztunnel drops them all and the policy refuses every connection'
            : `ztunnel drops ${l7.length} of its ${rules.length} rules, so what only they allowed is refused`
          : 'ztunnel never matches the HTTP conditions of its rules, so what they deny gets through';
      const field = WaypointOnlyActions.has(action) ? ['spec', 'action'] : ['spec', 'rules', l7[0]?.[0] ?? 0];
      findings.push(
        findingOf(
          l7PolicyWithoutWaypoint,
          context,
          policy,
          field,
          `${action} policy ztunnel cannot enforce whole (${reasons.join(', ')}) on ambient pods (${names}): ${effect}`,
          {
            fix: 'give the Services of these pods a waypoint (istio.io/use-waypoint) and attach the policy to it with targetRefs; keep an L4 policy at ztunnel that admits the waypoint (kfmesh migrate writes both)',
            evidence: evidenceFor(mesh, pods, `${ns}/${policy.metadata.name ?? ''}`),
          },
        ),
      );
    }
    return findings;
  },
};

/** A request to a Service of the first pod that the policy decides at ztunnel, where one of the first clients makes one. */
function evidenceFor(mesh: Mesh, pods: readonly Workload[], policy: string): string[] {
  const pod = pods[0];
  const service = mesh.services.find((s) => s.endpoints.some((e) => e.workload === pod));
  if (!service) return [];
  return tracedCall(
    mesh,
    service,
    (t) => t.hops.some((h) => h.kind === 'ztunnel' && (h.policy ?? '').includes(policy)),
    () => true,
  );
}
