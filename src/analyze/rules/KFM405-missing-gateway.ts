/**
 * KFM405: a VirtualService bound to a gateway that does not exist (no Istio Gateway, and no Gateway API
 * Gateway, of that name). Nothing serves its routes there.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { gatewayBindings } from '../evidence.ts';

export const missingGateway: Rule = {
  code: 'KFM405',
  name: 'missing-gateway',
  severity: Severity.Error,
  description: 'a VirtualService bound to a gateway that does not exist: nothing serves its routes there',
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.GatewayAnalyzer', code: 'IST0101' }],
  check(context: AnalyzeContext): Finding[] {
    return gatewayBindings(context).flatMap(({ vs, name, index, gateway }) =>
      gateway
        ? []
        : [
            findingOf(
              missingGateway,
              context,
              vs.source,
              ['spec', 'gateways', index],
              `bound to gateway ${name}, which does not exist: nothing serves these routes there`,
              {
                fix: `create Gateway ${name} or correct the name (short names are taken from the VirtualService's namespace)`,
              },
            ),
          ],
    );
  },
};
