/**
 * KFM602: an AuthorizationPolicy source (`namespaces`, `notNamespaces`) that names a namespace the platform
 * does not have (docs/semantics.md, Authorization on sidecars and gateways): a pattern (`prod-*`, `*-test`)
 * that matches none of its namespaces, or a name that is none of them. An ALLOW that names it admits no one
 * more; a DENY guards against no one. Checked only when the input declares its Namespaces.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { policySpec, wildcardMatches } from '../../mesh/authorization.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const policyNamesMissingNamespace: Rule = {
  code: 'KFM602',
  name: 'policy-names-missing-namespace',
  severity: Severity.Warning,
  description:
    'an AuthorizationPolicy source names a namespace (or a pattern) that matches no namespace of the platform',
  reads: [GroupKind.AuthorizationPolicy],
  istio: [{ analyzer: 'authz.AuthorizationPoliciesAnalyzer', code: 'IST0101' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    if (!snapshot.holds(GroupKind.Namespace)) return [];
    const namespaces = [...snapshot.namespaces()];
    return snapshot
      .list(GroupKind.AuthorizationPolicy)
      .flatMap((policy) =>
        (policySpec(policy).rules ?? []).flatMap((rule, r) =>
          (rule.from ?? []).flatMap((from, f) =>
            (['namespaces', 'notNamespaces'] as const).flatMap((field) =>
              (from.source?.[field] ?? []).flatMap((pattern, i) =>
                namespaces.some((ns) => wildcardMatches(pattern, ns))
                  ? []
                  : [
                      findingOf(
                        policyNamesMissingNamespace,
                        context,
                        policy,
                        ['spec', 'rules', r, 'from', f, 'source', field, i],
                        `${field} names ${pattern}, which matches no namespace of the platform`,
                        { fix: 'correct the namespace name, or create the namespace' },
                      ),
                    ],
              ),
            ),
          ),
        ),
      );
  },
};
