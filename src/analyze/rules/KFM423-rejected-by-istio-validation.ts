/**
 * KFM423: an Istio object that Istio's validation refuses (docs/semantics.md, Istio's validation): applied
 * to a cluster, istiod's admission webhook turns it away, so it is not configured at all; read from a
 * file, kfmesh simulates it as written, which no cluster would run. The checks are analyze/validation.ts's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { validatedKinds, validationProblems } from '../validation.ts';

export const rejectedByIstioValidation: Rule = {
  code: 'KFM423',
  name: 'rejected-by-istio-validation',
  severity: Severity.Error,
  description:
    "an Istio object that Istio's validation refuses (a Gateway without servers, a VirtualService without routes, TLS without certificates, ...): applying it fails, and nothing it says is configured",
  reads: [...validatedKinds],
  istio: [{ analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0106' }],
  check(context: AnalyzeContext): Finding[] {
    return validatedKinds.flatMap((kind) =>
      context.snapshot
        .list(kind)
        .flatMap((object) =>
          validationProblems(object).map((problem) =>
            findingOf(
              rejectedByIstioValidation,
              context,
              object,
              problem.field,
              `Istio's validation refuses it: ${problem.message}; applying it fails, so none of it is configured`,
              { fix: 'correct the object as the message says, then apply it' },
            ),
          ),
        ),
    );
  },
};
