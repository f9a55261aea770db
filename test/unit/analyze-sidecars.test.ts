/** The Sidecar resource rules (KFM209, KFM413) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only } from './analyze-fixtures.ts';

const sidecar = (namespace: string, name: string, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Sidecar',
  metadata: { name, namespace },
  spec: {
    ...(labels ? { workloadSelector: { labels } } : {}),
    egress: [{ hosts: ['./*', 'istio-system/*'] }],
  },
});

describe('KFM413 sidecar-resource-scope', () => {
  const base = [ns('team', { 'istio-injection': 'enabled' }), ...app('team', 'api')];

  test('a selector no workload of the namespace carries (IST0101)', () => {
    const found = only([...base, sidecar('team', 's', { app: 'apii' })], 'KFM413');
    assert.deepEqual(
      found.map((f) => f.istio?.[0]?.code),
      ['IST0101'],
    );
  });

  test('two Sidecars on one workload (IST0110), two without a selector in one namespace (IST0111)', () => {
    const two = only(
      [...base, sidecar('team', 'a', { app: 'api' }), sidecar('team', 'b', { app: 'api' })],
      'KFM413',
    );
    assert.deepEqual(two.map((f) => `${f.object.name} ${f.istio?.[0]?.code}`).sort(), [
      'a IST0110',
      'b IST0110',
    ]);
    const defaults = only([...base, sidecar('team', 'a'), sidecar('team', 'b')], 'KFM413');
    assert.deepEqual(defaults.map((f) => `${f.object.name} ${f.istio?.[0]?.code}`).sort(), [
      'a IST0111',
      'b IST0111',
    ]);
  });

  test('one Sidecar per workload and one default per namespace: nothing', () => {
    assert.deepEqual(
      only([...base, sidecar('team', 'a', { app: 'api' }), sidecar('team', 'b')], 'KFM413'),
      [],
    );
  });
});

describe('KFM209 sidecar-resource-on-ambient', () => {
  test('in an ambient namespace, or selecting ambient pods (IST0167)', () => {
    const ambient = [ns('team', { 'istio.io/dataplane-mode': 'ambient' }), ...app('team', 'api')];
    const found = only(
      [...ambient, sidecar('team', 'all'), sidecar('team', 'one', { app: 'api' })],
      'KFM209',
    );
    assert.deepEqual(found.map((f) => `${f.object.name} ${f.istio?.[0]?.code}`).sort(), [
      'all IST0167',
      'one IST0167',
    ]);
  });

  test('a namespace labelled ambient that keeps injection is not ambient: nothing', () => {
    const both = [
      ns('team', { 'istio.io/dataplane-mode': 'ambient', 'istio-injection': 'enabled' }),
      ...app('team', 'api'),
    ];
    assert.deepEqual(only([...both, sidecar('team', 'all')], 'KFM209'), []);
  });
});

describe('KFM417 deprecated-fields', () => {
  test("a fault delay's percent and a Sidecar's egressProxy (IST0002); percentage: nothing", () => {
    const vs = (delay: Record<string, unknown>): KubeObject => ({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'v', namespace: 'team' },
      spec: {
        hosts: ['api'],
        http: [
          { fault: { delay: { fixedDelay: '1s', ...delay } }, route: [{ destination: { host: 'api' } }] },
        ],
      },
    });
    const egress: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'Sidecar',
      metadata: { name: 's', namespace: 'team' },
      spec: {
        outboundTrafficPolicy: { mode: 'ALLOW_ANY', egressProxy: { host: 'proxy', port: { number: 3128 } } },
      },
    };
    const found = only([vs({ percent: 10 }), egress], 'KFM417');
    assert.deepEqual(found.map((f) => `${f.object.kind} ${f.istio?.[0]?.code}`).sort(), [
      'Sidecar IST0002',
      'VirtualService IST0002',
    ]);
    assert.deepEqual(only([vs({ percentage: { value: 10 } })], 'KFM417'), []);
  });

  test('a Sidecar egress host an earlier one of its listener covers (IST0133); other listeners: nothing', () => {
    const sidecar = (...egress: string[][]): KubeObject => ({
      apiVersion: 'networking.istio.io/v1',
      kind: 'Sidecar',
      metadata: { name: 'default', namespace: 'istio-system' },
      spec: { egress: egress.map((hosts) => ({ hosts })) },
    });
    const fields = (s: KubeObject) => only([s], 'KFM417').map((f) => `${f.field} ${f.istio?.[0]?.code}`);
    // `.` is the Sidecar's own namespace; `ns/*` covers every host of ns, before or after.
    assert.deepEqual(fields(sidecar(['./*', 'istio-system/*', 'a/x', 'a/x', 'b/x', 'b/*', 'c/*', 'c/y'])), [
      'spec.egress[0].hosts[1] IST0133',
      'spec.egress[0].hosts[3] IST0133',
      'spec.egress[0].hosts[5] IST0133',
      'spec.egress[0].hosts[7] IST0133',
    ]);
    // Hosts without a namespace, `~/…`, and repeats across listeners are not counted.
    assert.deepEqual(fields(sidecar(['x', 'x', '~/*', '~/*'], ['a/x'], ['a/x'])), []);
  });
});

describe('KFM424 envoy-filter-not-modelled', () => {
  const filter = (namespace: string, spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'networking.istio.io/v1alpha3',
    kind: 'EnvoyFilter',
    metadata: { name: 'f', namespace },
    spec: { configPatches: [], ...spec },
  });

  test('each EnvoyFilter, with the proxies it patches', () => {
    const scoped = only(
      [ns('apps', {}), filter('apps', { workloadSelector: { labels: { app: 'api' } } })],
      'KFM424',
    );
    assert.match(scoped[0]?.message ?? '', /of the workloads it selects: kfmesh's traces/);
    assert.equal(scoped[0]?.istio?.[0]?.code, 'IST0133');
    assert.match(only([filter('apps', {})], 'KFM424')[0]?.message ?? '', /every proxy of namespace apps/);
    assert.match(only([filter('istio-system', {})], 'KFM424')[0]?.message ?? '', /every proxy of the mesh/);
    assert.deepEqual(only([ns('apps', {})], 'KFM424'), []);
  });
});
