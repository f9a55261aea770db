/**
 * KFM405: a VirtualService bound to a gateway that does not exist: no Istio or Gateway API Gateway of that
 * name (docs/semantics.md, Gateway hosts). Nothing serves its routes there. A reference to one of the
 * gateways istiod generates for a Gateway API Gateway's listeners is internal, and Istio's validation
 * refuses it.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { gatewayBindings } from '../evidence.ts';

const notFound: IstioCounterpart = { analyzer: 'virtualservice.GatewayAnalyzer', code: 'IST0101' };
const internalReference: IstioCounterpart = { analyzer: 'virtualservice.GatewayAnalyzer', code: 'IST0165' };

export const missingGateway: Rule = {
  code: 'KFM405',
  name: 'missing-gateway',
  severity: Severity.Error,
  description: 'a VirtualService bound to a gateway that does not exist: nothing serves its routes there',
  reads: [GroupKind.VirtualService],
  istio: [notFound, internalReference],
  check(context: AnalyzeContext): Finding[] {
    return gatewayBindings(context).flatMap(({ vs, name, index, gateway, internal }) => {
      if (gateway) return [];
      const [message, fix, istio] = internal
        ? [
            `bound to ${name}, a name istiod gives internally to a Gateway API Gateway's listener: Istio's validation refuses it, and it may change with any release`,
            'attach an HTTPRoute to the Gateway API Gateway instead, or bind to an Istio Gateway',
            internalReference,
          ]
        : [
            `bound to gateway ${name}, which does not exist: nothing serves these routes there`,
            `create Gateway ${name} or correct the name (short names are taken from the VirtualService's namespace)`,
            notFound,
          ];
      return [
        findingOf(missingGateway, context, vs.source, ['spec', 'gateways', index], message, { fix, istio }),
      ];
    });
  },
};
