/**
 * The credential a gateway server's `tls.credentialName` names, as istiod reads it (docs/semantics.md,
 * Gateway credentials): a Secret in the namespace of the gateway's pods, holding `cert` and `key`, else
 * `tls.crt` and `tls.key`, the certificate PEM and valid now. The certificate is read with
 * @peculiar/asn1-x509 (a pure ASN.1 reader: the core does no I/O and has no Node crypto).
 */
import { GroupKind } from '../model/vocabulary.ts';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import type { KubeObject } from '../model/object.ts';
import { secretDataOf, specOf } from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';

/** Where a credential name points: `name` in the gateway pods' namespace, or `ns/name`. */
export function credentialSecretRef(
  credentialName: string,
  podNamespace: string,
): { namespace: string; name: string } {
  const slash = credentialName.indexOf('/');
  return slash < 0
    ? { namespace: podNamespace, name: credentialName }
    : { namespace: credentialName.slice(0, slash), name: credentialName.slice(slash + 1) };
}

/** A cert-manager Certificate that will write the Secret (its content cannot be checked before it does). */
export function certificateIssuing(
  snapshot: Snapshot,
  namespace: string,
  secretName: string,
): KubeObject | undefined {
  return snapshot
    .list(GroupKind.Certificate, namespace)
    .find((c) => specOf(c, 'cert-manager.io/Certificate').secretName === secretName);
}

const keyPairs = [
  ['cert', 'key'],
  ['tls.crt', 'tls.key'],
] as const;

/**
 * What is wrong with a gateway credential Secret, or undefined when istiod can serve it at `now` (without
 * `now`, the validity period is not checked).
 */
export function credentialProblem(secret: KubeObject, now: Date | undefined): string | undefined {
  const data = secretDataOf(secret);
  const filled = (k: string) => data[k] !== undefined && data[k] !== '';
  const pair = keyPairs.find(([cert, key]) => filled(cert) && filled(key));
  if (!pair) {
    const empty = keyPairs.find(([cert, key]) => cert in data && key in data);
    if (empty) return `its keys ${empty[0]} and ${empty[1]} are empty`;
    const found = Object.keys(data).sort();
    return `it has neither cert and key nor tls.crt and tls.key (it has ${found.length > 0 ? found.join(', ') : 'no keys'})`;
  }
  const text = data[pair[0]];
  if (text === null || text === undefined) return `its ${pair[0]} is not base64`;
  const validity = certificateValidity(text);
  if (typeof validity === 'string') return `its ${pair[0]} ${validity}`;
  if (now === undefined) return undefined;
  if (now.getTime() > validity.notAfter.getTime())
    return `its certificate expired at ${validity.notAfter.toISOString()}`;
  if (now.getTime() < validity.notBefore.getTime())
    return `its certificate is not valid before ${validity.notBefore.toISOString()}`;
  return undefined;
}

/** The validity period of the first certificate of a PEM text, or what keeps it from being read. */
export function certificateValidity(pem: string): { notBefore: Date; notAfter: Date } | string {
  const block = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(pem);
  if (!block) return 'holds no PEM certificate';
  let der: Uint8Array;
  try {
    der = Uint8Array.from(atob((block[1] ?? '').replace(/\s+/g, '')), (c) => c.charCodeAt(0));
  } catch {
    return 'holds a PEM block that is not base64';
  }
  try {
    const { validity } = AsnConvert.parse(der, Certificate).tbsCertificate;
    return { notBefore: validity.notBefore.getTime(), notAfter: validity.notAfter.getTime() };
  } catch {
    return 'holds a PEM block that is not an X.509 certificate';
  }
}
