/**
 * KFM417: Istio fields that are deprecated or ignored (docs/semantics.md, Routes the analyzer checks): a
 * VirtualService fault delay's `percent` (use `percentage`), and a Sidecar's
 * `outboundTrafficPolicy.egressProxy`, which istiod ignores. Kubeflow's and KServe's own objects use
 * neither; a platform team's hand-written ones may.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const deprecatedFields: Rule = {
  code: 'KFM417',
  name: 'deprecated-fields',
  severity: Severity.Info,
  description:
    "deprecated or ignored Istio fields: a fault delay's percent (use percentage), a Sidecar's egressProxy (ignored)",
  reads: [GroupKind.VirtualService, GroupKind.Sidecar],
  istio: [{ analyzer: 'deprecation.FieldAnalyzer', code: 'IST0002' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const delays = snapshot.list(GroupKind.VirtualService).flatMap((vs) =>
      (specOf(vs, 'networking.istio.io/VirtualService').http ?? []).flatMap((rule, r) =>
        (rule.fault?.delay?.percent ?? 0) > 0
          ? [
              findingOf(
                deprecatedFields,
                context,
                vs,
                ['spec', 'http', r, 'fault', 'delay', 'percent'],
                'fault.delay.percent is deprecated: use fault.delay.percentage',
                {
                  fix: 'write the share as percentage: {value: <percent>}',
                },
              ),
            ]
          : [],
      ),
    );
    const egress = snapshot.list(GroupKind.Sidecar).flatMap((sidecar) =>
      specOf(sidecar, 'networking.istio.io/Sidecar').outboundTrafficPolicy?.egressProxy !== undefined
        ? [
            findingOf(
              deprecatedFields,
              context,
              sidecar,
              ['spec', 'outboundTrafficPolicy', 'egressProxy'],
              'outboundTrafficPolicy.egressProxy is deprecated and ignored: traffic to unknown hosts does not go to that proxy',
              {
                fix: 'route egress through an egress gateway with a ServiceEntry and VirtualService instead',
              },
            ),
          ]
        : [],
    );
    return [...delays, ...egress];
  },
};
