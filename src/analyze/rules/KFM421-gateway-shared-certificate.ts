/**
 * KFM421: two Istio Gateways of one gateway workload serve TLS with the same certificate (the same
 * credentialName, or the same certificate and key files) (docs/semantics.md, Gateway credentials). A
 * browser that has an HTTP/2 connection open for a host of one may reuse it for a host of the other, since
 * the certificate covers both; the gateway routes that connection by the first host's server, which has no
 * routes for the second: 404. istioctl reports the same pair (IST0138), matching gateways as it does: the
 * other Gateway's selector holds every label of this one's (an empty selector matches every Gateway).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type IstioServer } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const gatewaySharedCertificate: Rule = {
  code: 'KFM421',
  name: 'gateway-shared-certificate',
  severity: Severity.Warning,
  description:
    'two Gateways of one gateway workload serve TLS with the same certificate: a browser may reuse a connection of one for a host of the other, and get 404',
  reads: [GroupKind.IstioGateway],
  istio: [{ analyzer: 'gateway.CertificateAnalyzer', code: 'IST0138' }],
  check(context: AnalyzeContext): Finding[] {
    const gateways = context.snapshot.list(GroupKind.IstioGateway).map((object) => {
      const spec = specOf(object, 'networking.istio.io/Gateway');
      return { object, selector: spec.selector ?? {}, servers: spec.servers ?? [] };
    });
    const findings: Finding[] = [];
    for (const a of gateways) {
      const sharing = gateways.filter(
        (b) =>
          b !== a &&
          Object.entries(a.selector).every(([k, v]) => b.selector[k] === v) &&
          a.servers.some((s) => b.servers.some((t) => sameCertificate(s, t))),
      );
      if (sharing.length === 0) continue;
      const names = sharing.map(
        (b) => `${b.object.metadata.namespace ?? 'default'}/${b.object.metadata.name ?? ''}`,
      );
      findings.push(
        findingOf(
          gatewaySharedCertificate,
          context,
          a.object,
          ['metadata', 'name'],
          `serves TLS with the same certificate as Gateway ${names.join(', ')} on the same gateway pods: a browser may send a request for a host of one over a connection opened for the other, and get 404`,
          {
            fix: 'give each Gateway its own certificate, or serve the hosts from one Gateway',
          },
        ),
      );
    }
    return findings;
  },
};

/** The same credential (by name), or, without one, the same certificate and key files. */
function sameCertificate(a: IstioServer, b: IstioServer): boolean {
  const x = a.tls;
  const y = b.tls;
  if (!x || !y) return false;
  if (x.credentialName && y.credentialName) return x.credentialName === y.credentialName;
  if (x.credentialName || y.credentialName) return false;
  return (
    !!x.serverCertificate &&
    x.serverCertificate === y.serverCertificate &&
    !!x.privateKey &&
    x.privateKey === y.privateKey
  );
}
