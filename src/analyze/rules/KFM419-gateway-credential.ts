/**
 * KFM419: a gateway server's `tls.credentialName` names a Secret that is not there, or one istiod cannot
 * serve: without the expected keys, not a PEM certificate, expired or not yet valid (docs/semantics.md,
 * Gateway credentials). The gateway then has no certificate for that server's hosts, and HTTPS to the
 * platform's ingress (the Kubeflow dashboard, a model's external URL) fails its handshake. A Secret that a
 * cert-manager Certificate of the namespace will write counts as there. An input without any Secret or
 * Certificate does not include them, and is not judged for missing ones.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { certificateIssuing, credentialProblem, credentialSecretRef } from '../../mesh/credentials.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'gateway.SecretAnalyzer';

export const gatewayCredential: Rule = {
  code: 'KFM419',
  name: 'gateway-credential',
  severity: Severity.Error,
  description:
    "a gateway server's credentialName names a Secret that is missing from the gateway pods' namespace, or one without a valid certificate: HTTPS to those hosts fails",
  reads: [GroupKind.IstioGateway],
  istio: [
    { analyzer, code: 'IST0101' },
    { analyzer, code: 'IST0161' },
  ],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const judgesMissing = snapshot.holds(GroupKind.Secret) || snapshot.holds(GroupKind.Certificate);
    const workloads = context.mesh().workloads;
    return snapshot.list(GroupKind.IstioGateway).flatMap((gateway) => {
      const spec = specOf(gateway, 'networking.istio.io/Gateway');
      const selector = spec.selector ?? {};
      // The gateway's pods may run in several namespaces: each reads the Secret from its own. A Gateway
      // without pods is KFM411's.
      const namespaces = [
        ...new Set(workloads.filter((w) => labelsMatch(w.labels, selector)).map((w) => w.namespace)),
      ].sort();
      return (spec.servers ?? []).flatMap((server, i) => {
        const credentialName = server.tls?.credentialName;
        if (!credentialName) return [];
        const report = (message: string, fix: string, code: string) => [
          findingOf(
            gatewayCredential,
            context,
            gateway,
            ['spec', 'servers', i, 'tls', 'credentialName'],
            message,
            {
              fix,
              istio: { analyzer, code },
            },
          ),
        ];
        return namespaces.flatMap((podNamespace) => {
          const ref = credentialSecretRef(credentialName, podNamespace);
          const secret = snapshot.get(GroupKind.Secret, ref.namespace, ref.name);
          if (secret) {
            const problem = credentialProblem(secret, context.now);
            if (problem === undefined) return [];
            return report(
              `credentialName ${credentialName}: Secret ${ref.namespace}/${ref.name} cannot be served: ${problem}`,
              'put a valid PEM certificate and key under tls.crt and tls.key (a kubernetes.io/tls Secret), or renew it',
              'IST0161',
            );
          }
          if (!judgesMissing || certificateIssuing(snapshot, ref.namespace, ref.name)) return [];
          return report(
            `credentialName ${credentialName}: there is no Secret ${ref.name} in ${ref.namespace}, where the gateway's pods run and read it`,
            `create the Secret in ${ref.namespace} (kubectl create secret tls ${ref.name} -n ${ref.namespace} --cert=... --key=...), or a cert-manager Certificate that writes it`,
            'IST0101',
          );
        });
      });
    });
  },
};
