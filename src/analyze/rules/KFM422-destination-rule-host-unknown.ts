/**
 * KFM422: a DestinationRule whose host is no Service's or ServiceEntry's visible where the rule applies
 * (docs/semantics.md, Route destinations; DestinationRule hosts). Its traffic policy and subsets apply to
 * nothing: a typo in the host, a short name taken from the wrong namespace, or a Service that was removed.
 * A wildcard host is judged by the Services it covers, as istiod applies it to them.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { resolveShortName } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { destinationTargets } from '../targets.ts';

export const destinationRuleHostUnknown: Rule = {
  code: 'KFM422',
  name: 'destination-rule-host-unknown',
  severity: Severity.Warning,
  description:
    'a DestinationRule whose host no Service or ServiceEntry visible to it has: its traffic policy and subsets apply to nothing',
  reads: [GroupKind.DestinationRule],
  istio: [{ analyzer: 'destinationrule.PodNotSelectedAnalyzer', code: 'IST0174' }],
  check(context: AnalyzeContext): Finding[] {
    const targets = destinationTargets(context);
    return context.snapshot.list(GroupKind.DestinationRule).flatMap((rule) => {
      const spec = specOf(rule, 'networking.istio.io/DestinationRule');
      if (typeof spec.host !== 'string' || spec.host === '') return [];
      const namespace = rule.metadata.namespace ?? 'default';
      const host = resolveShortName(spec.host, namespace, context.mesh().clusterDomain);
      if (targets.find(namespace, spec.exportTo ?? [], host)) return [];
      return [
        findingOf(
          destinationRuleHostUnknown,
          context,
          rule,
          ['spec', 'host'],
          `host ${host} is no Service's or ServiceEntry's that ${
            (spec.exportTo ?? []).length === 0
              ? `namespace ${namespace} sees`
              : 'the namespaces it is exported to see'
          }: its traffic policy${spec.subsets?.length ? ' and subsets apply' : ' applies'} to nothing`,
          {
            fix: "correct the host (a short name is taken from the DestinationRule's namespace), or create the Service or ServiceEntry it is meant for",
          },
        ),
      ];
    });
  },
};
