/** KFM303 service-ports-conflict on configurations that break it and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only } from './analyze-fixtures.ts';

const service = (name: string, ports: Record<string, unknown>[]): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'team' },
  spec: { selector: { app: 'api' }, ports },
});

describe('KFM303 service-ports-conflict', () => {
  const base = [ns('team', { 'istio-injection': 'enabled' }), ...app('team', 'api')];

  test('one port with two protocols (IST0116); one target port through ports of two protocols (IST0137)', () => {
    const udp = only([...base, service('dns', [{ name: 'dns', port: 80, protocol: 'UDP' }])], 'KFM303');
    assert.deepEqual(
      udp.map((f) => f.istio?.code),
      ['IST0116'],
    );
    const alias = service('alias', [{ name: 'tcp-raw', port: 9000, targetPort: 8080 }]);
    const found = only([...base, alias], 'KFM303');
    assert.deepEqual(
      found.map((f) => f.istio?.code),
      ['IST0137'],
    );
    assert.match(
      found[0]?.message ?? '',
      /reach target port 8080 of its pods through ports 80 \(HTTP\), 9000 \(TCP\)/,
    );
  });

  test('an alias port of the same protocol, or a workload without a sidecar: nothing', () => {
    assert.deepEqual(
      only([...base, service('alias', [{ name: 'http-alt', port: 9000, targetPort: 8080 }])], 'KFM303'),
      [],
    );
    const plain = [
      ns('team', {}),
      ...app('team', 'api'),
      service('alias', [{ name: 'tcp-raw', port: 9000, targetPort: 8080 }]),
    ];
    assert.deepEqual(only(plain, 'KFM303'), []);
  });
});
