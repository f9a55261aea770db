/**
 * KFM417: Istio fields that are deprecated or ignored (docs/semantics.md, Routes the analyzer checks): a
 * VirtualService fault delay's `percent` (use `percentage`), and a Sidecar's
 * `outboundTrafficPolicy.egressProxy`, which istiod ignores, and a Sidecar egress host that an earlier
 * host of the same listener already covers (`ns/a` twice, `ns/a` after `ns/*`, `ns/*` after `ns/a`; `.` is
 * the Sidecar's own namespace), which adds nothing. Kubeflow's own istio-system Sidecar lists
 * `istio-system/*` beside `./*`.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { egressHostOf } from '../../mesh/sidecar-outbound.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import type { IstioCounterpart } from '../../model/finding.ts';

const deprecated: IstioCounterpart = { analyzer: 'deprecation.FieldAnalyzer', code: 'IST0002' };
/** Istio's validation warns of it, and istioctl reports the warning. */
const schemaWarning: IstioCounterpart = {
  analyzer: 'schemaValidation.CollectionValidationAnalyzer',
  code: 'IST0133',
};

export const deprecatedFields: Rule = {
  code: 'KFM417',
  name: 'deprecated-fields',
  severity: Severity.Info,
  description:
    "deprecated or ignored Istio fields: a fault delay's percent (use percentage), a Sidecar's egressProxy (ignored), a Sidecar egress host listed twice",
  reads: [GroupKind.VirtualService, GroupKind.Sidecar],
  istio: [deprecated, schemaWarning],
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
                  istio: deprecated,
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
                istio: deprecated,
              },
            ),
          ]
        : [],
    );
    const duplicates = snapshot
      .list(GroupKind.Sidecar)
      .flatMap((sidecar) =>
        (specOf(sidecar, 'networking.istio.io/Sidecar').egress ?? []).flatMap((listener, l) =>
          repeatedHosts(listener.hosts ?? [], sidecar.metadata.namespace ?? 'default').map(
            ({ index, host }) =>
              findingOf(
                deprecatedFields,
                context,
                sidecar,
                ['spec', 'egress', l, 'hosts', index],
                `egress host ${host} is already covered by an earlier host of this listener: it adds nothing`,
                { fix: `remove ${host} from the list`, istio: schemaWarning },
              ),
          ),
        ),
      );
    return [...delays, ...egress, ...duplicates];
  },
};

/**
 * The egress hosts (`namespace/host`) that an earlier one of the same list covers: the same host again, any
 * host of a namespace already given as `ns/*`, or `ns/*` after a host of that namespace.
 */
function repeatedHosts(hosts: readonly string[], ownNamespace: string): { index: number; host: string }[] {
  const seen = new Map<string, Set<string>>();
  const repeated: { index: number; host: string }[] = [];
  hosts.forEach((host, index) => {
    const { ns, host: name, namespaced } = egressHostOf(host, ownNamespace);
    if (!namespaced || ns.startsWith('~')) return;
    const names = seen.get(ns) ?? new Set<string>();
    seen.set(ns, names);
    if (name === '*' ? names.size > 0 : names.has(name) || names.has('*')) repeated.push({ index, host });
    names.add(name);
  });
  return repeated;
}
