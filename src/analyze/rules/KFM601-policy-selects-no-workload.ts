/**
 * KFM601: an AuthorizationPolicy that applies to no workload of the mesh (docs/semantics.md, Authorization
 * on sidecars and gateways): its selector matches no pod with a proxy in its namespace (in any namespace,
 * for a policy of the root namespace), or its namespace has no such pod at all. A policy meant to protect
 * something protects nothing; often a label was mistyped or the workload was renamed. Policies that target
 * a gateway or Service by `targetRefs` are KFM202's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { policySpec, targetRefsOf } from '../../mesh/authorization.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import { addTo } from '../../model/multimap.ts';
import { selectorText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const policySelectsNoWorkload: Rule = {
  code: 'KFM601',
  name: 'policy-selects-no-workload',
  severity: Severity.Warning,
  description:
    'an AuthorizationPolicy whose selector (or namespace) holds no workload of the mesh: it protects nothing',
  reads: [GroupKind.AuthorizationPolicy],
  istio: [{ analyzer: 'authz.AuthorizationPoliciesAnalyzer', code: 'IST0127' }],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const root = mesh.config.rootNamespace;
    const proxied = mesh.workloads.filter((w) => w.proxy !== ProxyKind.None && w.proxy !== ProxyKind.Ztunnel);
    const byNamespace = new Map<string, Workload[]>();
    for (const w of proxied) addTo(byNamespace, w.namespace, w);
    return context.snapshot.list(GroupKind.AuthorizationPolicy).flatMap((policy) => {
      if (targetRefsOf(policy).length > 0) return [];
      const ns = policy.metadata.namespace ?? 'default';
      const selector = policySpec(policy).selector?.matchLabels;
      if (ns === root && selector === undefined) return [];
      const candidates = ns === root ? proxied : (byNamespace.get(ns) ?? []);
      if (candidates.some((w) => selector === undefined || labelsMatch(w.labels, selector))) return [];
      return [
        findingOf(
          policySelectsNoWorkload,
          context,
          policy,
          selector ? ['spec', 'selector'] : [],
          selector
            ? `selects ${selectorText(selector)}, which no workload with a proxy${ns === root ? ' in any namespace' : ` in ${ns}`} carries: the policy applies to nothing`
            : `applies to the workloads of ${ns}, and ${ns} has none with a proxy: the policy applies to nothing`,
          {
            fix: 'correct the selector (or the namespace) to the workload the policy is meant for, or delete the policy',
          },
        ),
      ];
    });
  },
};
