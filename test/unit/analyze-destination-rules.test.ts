/** The DestinationRule rules (KFM409, KFM410, KFM422) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only } from './analyze-fixtures.ts';

const destinationRule = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'DestinationRule',
  metadata: { name: 'dr', namespace: 'apps' },
  spec: { host: 'api', ...spec },
});

describe('KFM409 subset-selects-no-pod', () => {
  const base = [ns('apps', {}), ...app('apps', 'api')];

  test("a subset whose labels none of the host's pods carries", () => {
    const found = only(
      [
        ...base,
        destinationRule({
          subsets: [
            { name: 'v2', labels: { version: 'v2' } },
            { name: 'all', labels: { app: 'api' } },
          ],
        }),
      ],
      'KFM409',
    );
    assert.deepEqual(
      found.map((f) => f.field),
      ['spec.subsets[0].labels'],
    );
    assert.match(
      found[0]?.message ?? '',
      /subset v2 selects version=v2, which no pod of api\.apps\.svc\.cluster\.local carries/,
    );
    assert.equal(found[0]?.istio?.[0]?.code, 'IST0173');
  });

  test("a node's topology labels count as the pod's", () => {
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'api-0', namespace: 'apps', labels: { app: 'api' } },
      spec: { nodeName: 'n1', containers: [{ name: 'api' }] },
    };
    const node: KubeObject = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1', labels: { 'topology.kubernetes.io/zone': 'a' } },
    };
    const subset = destinationRule({
      subsets: [{ name: 'zone-a', labels: { 'topology.kubernetes.io/zone': 'a' } }],
    });
    const service = app('apps', 'api')[1] as KubeObject;
    assert.deepEqual(only([ns('apps', {}), service, pod, node, subset], 'KFM409'), []);
    assert.equal(only([ns('apps', {}), service, pod, subset], 'KFM409').length, 1);
  });
});

describe('KFM410 tls-without-ca', () => {
  test('SIMPLE or MUTUAL without caCertificates, for the host (IST0128) or a port (IST0129)', () => {
    const found = only(
      [
        destinationRule({
          trafficPolicy: {
            tls: { mode: 'SIMPLE' },
            portLevelSettings: [{ port: { number: 443 }, tls: { mode: 'MUTUAL' } }],
          },
        }),
      ],
      'KFM410',
    );
    assert.deepEqual(found.map((f) => `${f.field} ${f.istio?.[0]?.code}`).sort(), [
      'spec.trafficPolicy.portLevelSettings[0].tls.mode IST0129',
      'spec.trafficPolicy.tls.mode IST0128',
    ]);
  });

  test('with caCertificates, with ISTIO_MUTUAL, or a credentialName on a workload-selected rule: nothing', () => {
    assert.deepEqual(
      only(
        [destinationRule({ trafficPolicy: { tls: { mode: 'SIMPLE', caCertificates: '/etc/ca.pem' } } })],
        'KFM410',
      ),
      [],
    );
    assert.deepEqual(
      only([destinationRule({ trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } })], 'KFM410'),
      [],
    );
    const selected = destinationRule({
      workloadSelector: { matchLabels: { app: 'api' } },
      trafficPolicy: { tls: { mode: 'MUTUAL', credentialName: 'client' } },
    });
    assert.deepEqual(only([selected], 'KFM410'), []);
  });
});

describe('KFM422 destination-rule-host-unknown', () => {
  const base = [ns('apps', {}), ns('other', {}), ...app('apps', 'api')];
  const at = (namespace: string, spec: Record<string, unknown>): KubeObject => ({
    ...destinationRule(spec),
    metadata: { name: 'dr', namespace },
  });

  test('a host no Service or ServiceEntry has, or one its namespace does not see', () => {
    const typo = only([...base, destinationRule({ host: 'apii' })], 'KFM422');
    assert.deepEqual(
      typo.map((f) => [f.field, f.istio?.[0]?.code]),
      [['spec.host', 'IST0174']],
    );
    assert.match(
      typo[0]?.message ?? '',
      /host apii\.apps\.svc\.cluster\.local is no Service's or ServiceEntry's/,
    );
    // A short name is taken from the rule's own namespace: `api` in `other` is api.other, which is not there.
    assert.equal(only([...base, at('other', { host: 'api' })], 'KFM422').length, 1);
    assert.deepEqual(only([...base, at('other', { host: 'api.apps.svc.cluster.local' })], 'KFM422'), []);
    // A Service exported only to its own namespace is not seen from another.
    const hidden = base.map((o) =>
      o.kind === 'Service'
        ? { ...o, metadata: { ...o.metadata, annotations: { 'networking.istio.io/exportTo': '.' } } }
        : o,
    );
    assert.equal(only([...hidden, at('other', { host: 'api.apps.svc.cluster.local' })], 'KFM422').length, 1);
    assert.deepEqual(only([...hidden, destinationRule({})], 'KFM422'), []);
  });

  test("a ServiceEntry's host, and a wildcard host that covers a Service, are found", () => {
    const entry: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'db', namespace: 'apps' },
      spec: { hosts: ['db.example.com'], ports: [{ number: 5432, name: 'tcp', protocol: 'TCP' }] },
    };
    assert.deepEqual(only([...base, entry, destinationRule({ host: 'db.example.com' })], 'KFM422'), []);
    assert.deepEqual(only([...base, destinationRule({ host: '*.apps.svc.cluster.local' })], 'KFM422'), []);
    assert.equal(only([...base, destinationRule({ host: '*.nowhere.example' })], 'KFM422').length, 1);
  });
});
