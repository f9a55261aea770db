/**
 * KFM405: a VirtualService bound to a gateway that does not exist (no Istio Gateway, and no Gateway API
 * Gateway, of that name). Nothing serves its routes there.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { Mesh, writtenAsVirtualService } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { gatewayNamed } from './KFM406-host-not-on-gateway.ts';

export const missingGateway: Rule = {
  code: 'KFM405',
  name: 'missing-gateway',
  severity: Severity.Error,
  description: 'a VirtualService bound to a gateway that does not exist: nothing serves its routes there',
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.GatewayAnalyzer', code: 'IST0101' }],
  check(context: AnalyzeContext): Finding[] {
    return context
      .mesh()
      .virtualServices.filter(writtenAsVirtualService)
      .flatMap((vs) =>
        // Resolved gateway names keep the order of spec.gateways.
        vs.gateways.flatMap((name, i) => {
          if (name === Mesh || gatewayNamed(context.snapshot, name)) return [];
          return [
            findingOf(
              missingGateway,
              context,
              vs.source,
              ['spec', 'gateways', i],
              `bound to gateway ${name}, which does not exist: nothing serves these routes there`,
              {
                fix: `create Gateway ${name} or correct the name (short names are taken from the VirtualService's namespace)`,
              },
            ),
          ];
        }),
      );
  },
};
