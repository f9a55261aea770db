/**
 * KFM423: an Istio object that Istio's validation refuses (docs/semantics.md, Istio's validation): applied
 * to a cluster, istiod's admission webhook turns it away, so it is not configured at all; read from a
 * file, kfmesh simulates it as written, which no cluster would run. The checks are analyze/validation.ts's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { IstioCounterpart } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf, type IstioGatewaySpec } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { selectorText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { validatedKinds, validationProblems } from '../validation.ts';

const refused: IstioCounterpart = {
  analyzer: 'schemaValidation.CollectionValidationAnalyzer',
  code: 'IST0106',
};
/** istioctl's conflicting-gateway analyzer reports a Gateway without servers as selecting nothing. */
const selectorNotFound: IstioCounterpart = {
  analyzer: 'gateway.ConflictingGatewayAnalyzer',
  code: 'IST0101',
};

export const rejectedByIstioValidation: Rule = {
  code: 'KFM423',
  name: 'rejected-by-istio-validation',
  severity: Severity.Error,
  description:
    "an Istio object that Istio's validation refuses (a Gateway without servers, a VirtualService without routes, TLS without certificates, ...): applying it fails, and nothing it says is configured",
  reads: [...validatedKinds],
  istio: [refused, selectorNotFound],
  check(context: AnalyzeContext): Finding[] {
    const gateways = context.snapshot
      .list(GroupKind.IstioGateway)
      .map((g) => specOf(g, 'networking.istio.io/Gateway'));
    return validatedKinds.flatMap((kind) =>
      context.snapshot.list(kind).flatMap((object) =>
        validationProblems(object).map((problem) =>
          findingOf(
            rejectedByIstioValidation,
            context,
            object,
            problem.field,
            `Istio's validation refuses it: ${problem.message}; applying it fails, so none of it is configured`,
            {
              fix: 'correct the object as the message says, then apply it',
              istio:
                kind === GroupKind.IstioGateway && notAmongServers(gateways, object)
                  ? [refused, selectorNotFound]
                  : refused,
            },
          ),
        ),
      ),
    );
  },
};

/**
 * Whether istioctl's conflicting-gateway analyzer calls a Gateway's selector not found: it looks the selector
 * up among those of the Gateways' servers, so a Gateway without servers, with a selector that no Gateway with
 * servers has (written in any order), is reported, whatever pods there are.
 */
function notAmongServers(gateways: readonly IstioGatewaySpec[], object: KubeObject): boolean {
  const spec = specOf(object, 'networking.istio.io/Gateway');
  const key = (g: IstioGatewaySpec) =>
    selectorText(Object.fromEntries(Object.entries(g.selector ?? {}).sort()));
  if (!key(spec) || (spec.servers ?? []).length > 0) return false;
  return !gateways.some((g) => (g.servers ?? []).length > 0 && key(g) === key(spec));
}
