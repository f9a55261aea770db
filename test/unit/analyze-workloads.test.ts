/** KFM703 service-ports-conflict on configurations that break it and ones that do not. */
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

describe('KFM703 service-ports-conflict', () => {
  const base = [ns('team', { 'istio-injection': 'enabled' }), ...app('team', 'api')];

  test('one port with two protocols (IST0116); one target port through ports of two protocols (IST0137)', () => {
    const udp = only([...base, service('dns', [{ name: 'dns', port: 80, protocol: 'UDP' }])], 'KFM703');
    assert.deepEqual(
      udp.map((f) => f.istio?.[0]?.code),
      ['IST0116'],
    );
    const alias = service('alias', [{ name: 'tcp-raw', port: 9000, targetPort: 8080 }]);
    const found = only([...base, alias], 'KFM703');
    assert.deepEqual(
      found.map((f) => f.istio?.[0]?.code),
      ['IST0137'],
    );
    assert.match(
      found[0]?.message ?? '',
      /reach target port 8080 of its pods through ports 80 \(HTTP\), 9000 \(TCP\)/,
    );
  });

  test('an alias port of the same protocol, or a workload without a sidecar: nothing', () => {
    assert.deepEqual(
      only([...base, service('alias', [{ name: 'http-alt', port: 9000, targetPort: 8080 }])], 'KFM703'),
      [],
    );
    const plain = [
      ns('team', {}),
      ...app('team', 'api'),
      service('alias', [{ name: 'tcp-raw', port: 9000, targetPort: 8080 }]),
    ];
    assert.deepEqual(only(plain, 'KFM703'), []);
  });
});

describe('KFM704 namespace-injection and KFM705 pod-missing-proxy', () => {
  test('no injection label (IST0102, info); istio-injection with a revision (IST0123, warning); ambient or disabled: nothing', () => {
    const found = only(
      [
        ns('plain', {}),
        ns('both', { 'istio-injection': 'enabled', 'istio.io/rev': 'canary' }),
        ns('off', { 'istio-injection': 'disabled' }),
        ns('amb', { 'istio.io/dataplane-mode': 'ambient' }),
        ns('kube-system', {}),
      ],
      'KFM704',
    );
    assert.deepEqual(found.map((f) => `${f.object.name} ${f.severity} ${f.istio?.[0]?.code}`).sort(), [
      'both warning IST0123',
      'plain info IST0102',
    ]);
  });

  test('a running pod without istio-proxy in an injected namespace (IST0103); opted out or host network: nothing', () => {
    const pod = (
      name: string,
      extra: Record<string, unknown> = {},
      labels: Record<string, string> = {},
    ): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'team', labels },
      spec: { containers: [{ name: 'server' }], ...extra },
    });
    const objects = [
      ns('team', { 'istio-injection': 'enabled' }),
      pod('stale'),
      pod('host', { hostNetwork: true }),
      pod('out', {}, { 'sidecar.istio.io/inject': 'false' }),
    ];
    assert.deepEqual(
      only(objects, 'KFM705').map((f) => `${f.object.name} ${f.istio?.[0]?.code}`),
      ['stale IST0103'],
    );
  });
});
