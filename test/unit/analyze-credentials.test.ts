/** KFM419 (gateway credentials) and the certificate reading it rests on, on a Kubeflow-shaped HTTPS ingress. */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { analyze } from '../../src/analyze/analyze.ts';
import { certificateValidity } from '../../src/mesh/credentials.ts';
import { fileURLToPath } from 'node:url';

const data = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../../test/data/credentials/${name}`, import.meta.url)), 'utf8');
const cert = data('kubeflow-example.crt');
const key = data('kubeflow-example.key');
const openssl = new X509Certificate(cert);
const validFrom = new Date(openssl.validFrom);
const validTo = new Date(openssl.validTo);
const during = new Date((validFrom.getTime() + validTo.getTime()) / 2);

// Kubeflow's gateway (kubeflow/kubeflow-gateway) served by Istio's ingress pods in istio-system.
const ingressPod: KubeObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'istio-ingressgateway-0',
    namespace: 'istio-system',
    labels: { istio: 'ingressgateway' },
  },
  spec: { containers: [{ name: 'istio-proxy' }] },
};
const ingressService: KubeObject = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'istio-ingressgateway', namespace: 'istio-system' },
  spec: { selector: { istio: 'ingressgateway' }, ports: [{ name: 'https', port: 443 }] },
};
const kubeflowGateway: KubeObject = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'Gateway',
  metadata: { name: 'kubeflow-gateway', namespace: 'kubeflow' },
  spec: {
    selector: { istio: 'ingressgateway' },
    servers: [
      {
        port: { number: 443, name: 'https', protocol: 'HTTPS' },
        hosts: ['*'],
        tls: { mode: 'SIMPLE', credentialName: 'kubeflow-tls' },
      },
    ],
  },
};
const secret = (namespace: string, values: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'kubeflow-tls', namespace },
  type: 'kubernetes.io/tls',
  data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const base = [ingressPod, ingressService, kubeflowGateway];

function findings(objects: KubeObject[], now?: Date) {
  return analyze(Snapshot.of(objects, 'test.yaml'), now ? { now } : {})
    .filter((f) => f.code === 'KFM419')
    .map((f) => ({ ist: f.istio?.[0]?.code, message: f.message }));
}

describe('certificateValidity', () => {
  test('reads the validity period OpenSSL reads', () => {
    const validity = certificateValidity(cert);
    assert.ok(typeof validity !== 'string', String(validity));
    assert.equal(validity.notBefore.getTime(), validFrom.getTime());
    assert.equal(validity.notAfter.getTime(), validTo.getTime());
  });
  test('says what keeps a value from being a certificate', () => {
    assert.equal(certificateValidity('hush hush'), 'holds no PEM certificate');
    assert.equal(
      certificateValidity('-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----'),
      'holds a PEM block that is not an X.509 certificate',
    );
  });
});

describe('KFM419: gateway credentials', () => {
  test("the Secret in the Gateway's namespace instead of the pods': missing where the pods read it", () => {
    const found = findings([...base, secret('kubeflow', { 'tls.crt': cert, 'tls.key': key })], during);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.ist, 'IST0101');
    assert.match(
      found[0]?.message ?? '',
      /no Secret kubeflow-tls in istio-system, where the gateway's pods run/,
    );
  });

  test('a valid Secret where the pods run: nothing to report', () => {
    assert.deepEqual(
      findings([...base, secret('istio-system', { 'tls.crt': cert, 'tls.key': key })], during),
      [],
    );
  });

  test('the certificate judged at --now: expired after its end, not yet valid before its start', () => {
    const objects = [...base, secret('istio-system', { 'tls.crt': cert, 'tls.key': key })];
    const after = findings(objects, new Date(validTo.getTime() + 1000));
    assert.deepEqual(
      after.map((f) => f.ist),
      ['IST0161'],
    );
    assert.match(after[0]?.message ?? '', new RegExp(`expired at ${validTo.toISOString()}`));
    const before = findings(objects, new Date(validFrom.getTime() - 1000));
    assert.match(before[0]?.message ?? '', /not valid before/);
    // Without a time, validity is not judged.
    assert.deepEqual(findings(objects), []);
  });

  test('keys istiod does not read, or a value that is not a certificate', () => {
    const wrongKeys = findings(
      [...base, secret('istio-system', { 'tls.cert': cert, 'tls.key': key })],
      during,
    );
    assert.match(
      wrongKeys[0]?.message ?? '',
      /neither cert and key nor tls.crt and tls.key \(it has tls.cert, tls.key\)/,
    );
    const notPem = findings([...base, secret('istio-system', { 'tls.crt': 'hush', 'tls.key': key })], during);
    assert.match(notPem[0]?.message ?? '', /its tls.crt holds no PEM certificate/);
  });

  test('a cert-manager Certificate that writes the Secret counts as the Secret', () => {
    const certificate: KubeObject = {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'kubeflow-tls', namespace: 'istio-system' },
      spec: {
        secretName: 'kubeflow-tls',
        dnsNames: ['kubeflow.example.com'],
        issuerRef: { name: 'letsencrypt' },
      },
    };
    assert.deepEqual(findings([...base, certificate], during), []);
  });

  test('an input without Secrets does not include them: not judged', () => {
    assert.deepEqual(findings(base, during), []);
  });
});
