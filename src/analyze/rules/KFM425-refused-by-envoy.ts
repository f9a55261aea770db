/**
 * KFM425: a route whose values Envoy cannot load though the API server stored them (docs/semantics.md,
 * Regular expressions): an HTTPRoute regex that RE2 does not compile (nothing validates Gateway API
 * regexes before Envoy), or a VirtualService that Istio's validation takes but Envoy's RE2 refuses (a
 * group name given twice, a rewrite substitution with an unknown escape or group). Envoy rejects the route
 * configuration holding it, so the proxy keeps its previous routes; kfmesh's trace lets the match match
 * nothing and the rewrite change nothing. The checks are analyze/route-values.ts's; read from a file,
 * such an object is bad input to the commands that simulate the data plane (they stop at it), and this
 * finding to `analyze`.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { valueProblems } from '../route-values.ts';

export const refusedByEnvoy: Rule = {
  code: 'KFM425',
  name: 'refused-by-envoy',
  severity: Severity.Error,
  description:
    'a route value Envoy cannot load (an HTTPRoute regex that is not RE2, a group name given twice, a rewrite naming a group the regex lacks): the proxies reject the routes holding it and keep their old ones',
  reads: [GroupKind.VirtualService, GroupKind.HTTPRoute],
  check(context: AnalyzeContext): Finding[] {
    return [GroupKind.VirtualService, GroupKind.HTTPRoute].flatMap((kind) =>
      context.snapshot.list(kind).flatMap((object) =>
        valueProblems(object)
          .filter((p) => p.envoyOnly)
          .map((problem) =>
            findingOf(
              refusedByEnvoy,
              context,
              object,
              problem.field,
              `Envoy cannot load it: ${problem.message}; the proxies reject the route configuration holding it and keep serving their previous routes`,
              {
                fix: 'write the pattern in RE2 syntax (https://github.com/google/re2/wiki/Syntax) and apply it again',
              },
            ),
          ),
      ),
    );
  },
};
