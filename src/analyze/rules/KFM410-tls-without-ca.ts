/**
 * KFM410: a DestinationRule that originates TLS (`SIMPLE` or `MUTUAL`) without `caCertificates`, for the
 * whole host or one port (docs/semantics.md, mTLS and identity). Before Istio 1.20 the proxy then checks
 * no server certificate at all; from 1.20 it checks it against the CA bundle of the proxy's image, which a
 * model server with a private CA does not chain to. A `credentialName` on a DestinationRule with a
 * workload selector brings its own CA and is left alone.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type ClientTls } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'destinationrule.CaCertificateAnalyzer';

export const tlsWithoutCa: Rule = {
  code: 'KFM410',
  name: 'tls-without-ca',
  severity: Severity.Warning,
  description:
    "TLS origination without caCertificates: the server's certificate is checked against nothing (before Istio 1.20) or only the image's public CA bundle",
  reads: [GroupKind.DestinationRule],
  istio: [
    { analyzer, code: 'IST0128' },
    { analyzer, code: 'IST0129' },
  ],
  check(context: AnalyzeContext): Finding[] {
    return context.snapshot.list(GroupKind.DestinationRule).flatMap((rule) => {
      const spec = specOf(rule, 'networking.istio.io/DestinationRule');
      const selected = spec.workloadSelector !== undefined;
      const unverified = (tls: ClientTls | undefined) =>
        (tls?.mode === 'SIMPLE' || tls?.mode === 'MUTUAL') &&
        !tls.caCertificates &&
        !(tls.credentialName && selected);
      const finding = (tls: ClientTls, field: (string | number)[], where: string, code: string) =>
        findingOf(
          tlsWithoutCa,
          context,
          rule,
          [...field, 'tls', 'mode'],
          `originates ${tls.mode} TLS to ${spec.host ?? '?'}${where} without caCertificates: before Istio 1.20 the proxy checks no server certificate; from 1.20 only against its image's public CA bundle`,
          {
            fix: "set tls.caCertificates to the CA that signs the server's certificate",
            istio: { analyzer, code },
          },
        );
      const top = spec.trafficPolicy?.tls;
      return [
        ...(top && unverified(top) ? [finding(top, ['spec', 'trafficPolicy'], '', 'IST0128')] : []),
        ...(spec.trafficPolicy?.portLevelSettings ?? []).flatMap((p, i) =>
          p.tls && unverified(p.tls)
            ? [
                finding(
                  p.tls,
                  ['spec', 'trafficPolicy', 'portLevelSettings', i],
                  ` port ${p.port?.number ?? '?'}`,
                  'IST0129',
                ),
              ]
            : [],
        ),
      ];
    });
  },
};
