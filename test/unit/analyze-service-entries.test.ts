/** The ServiceEntry rules (KFM414, KFM415) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { only } from './analyze-fixtures.ts';

const entry = (name: string, namespace: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace },
  spec: { hosts: ['db.example.com'], resolution: 'DNS', ...spec },
});
const meshConfig = (proxyMetadata: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'istio', namespace: 'istio-system' },
  data: { mesh: JSON.stringify({ defaultConfig: { proxyMetadata } }) },
});

describe('KFM414 service-entry-without-address', () => {
  const tcp = entry('db', 'team', {
    ports: [
      { number: 5432, name: 'pg', protocol: 'TCP' },
      { number: 443, name: 'https', protocol: 'HTTPS' },
    ],
  });

  test('a TCP port without addresses (IST0134); not the HTTPS one', () => {
    assert.deepEqual(
      only([tcp], 'KFM414').map((f) => `${f.field} ${f.istio?.[0]?.code}`),
      ['spec.ports[0] IST0134'],
    );
  });

  test('addresses, an allocated status address, or DNS auto-allocation: nothing', () => {
    assert.deepEqual(
      only(
        [entry('db', 'team', { addresses: ['240.0.0.1'], ports: [{ number: 5432, name: 'pg' }] })],
        'KFM414',
      ),
      [],
    );
    assert.deepEqual(only([{ ...tcp, status: { addresses: [{ value: '240.240.0.1' }] } }], 'KFM414'), []);
    const capture = meshConfig({ ISTIO_META_DNS_CAPTURE: 'true', ISTIO_META_DNS_AUTO_ALLOCATE: 'true' });
    assert.deepEqual(only([tcp, capture], 'KFM414'), []);
    assert.equal(
      only([tcp, meshConfig({ ISTIO_META_DNS_AUTO_ALLOCATE: 'true' })], 'KFM414').length,
      1,
      'without DNS capture nothing allocates',
    );
  });
});

describe('KFM415 conflicting-service-entry-protocols', () => {
  const port = (protocol: string) => ({ ports: [{ number: 443, name: 'p', protocol }] });

  test('one host and port, two protocols, seen together (IST0177)', () => {
    const found = only([entry('a', 'team', port('TLS')), entry('b', 'team', port('HTTPS'))], 'KFM415');
    assert.deepEqual(found.map((f) => `${f.object.name} ${f.istio?.[0]?.code}`).sort(), [
      'a IST0177',
      'b IST0177',
    ]);
    assert.match(
      found[0]?.message ?? '',
      /db\.example\.com:443 is also declared by ServiceEntry team\/(a|b) with another protocol \(HTTPS, TLS\)/,
    );
  });

  test('the same protocol, or exported to namespaces that share no sidecar: nothing', () => {
    assert.deepEqual(only([entry('a', 'team', port('TLS')), entry('b', 'team', port('TLS'))], 'KFM415'), []);
    const local = (name: string, ns: string, protocol: string) =>
      entry(name, ns, { ...port(protocol), exportTo: ['.'] });
    assert.deepEqual(only([local('a', 'team-a', 'TLS'), local('b', 'team-b', 'HTTPS')], 'KFM415'), []);
  });
});
