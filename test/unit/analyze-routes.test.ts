/** The routing rules (KFM401, KFM402, KFM405 to KFM408) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only, patched } from './analyze-fixtures.ts';

const virtualService = (
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
  created = '2026-01-01T00:00:00Z',
): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace, creationTimestamp: created },
  spec,
});
const gateway = (namespace: string, name: string, hosts: string[]): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace },
  spec: {
    selector: { istio: 'ingressgateway' },
    servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts }],
  },
});
const to = (host: string, extra: Record<string, unknown> = {}) => [
  { route: [{ destination: { host, ...extra } }] },
];

describe('KFM401 route-to-missing-target', () => {
  const route = (host: string, port?: number, more: Record<string, unknown> = {}): KubeObject =>
    virtualService('apps', 'r', {
      hosts: ['api'],
      http: to(host, port === undefined ? {} : { port: { number: port } }),
      ...more,
    });
  const base = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api')];

  test('a missing Service, a missing port (with its patch): Istio IST0101', () => {
    const gone = only([...base, route('gone', 80)], 'KFM401');
    assert.match(gone[0]?.message ?? '', /gone\.apps\.svc\.cluster\.local, which no Service or ServiceEntry/);
    assert.equal(gone[0]?.istio?.[0]?.code, 'IST0101');
    const port = only([...base, route('api', 9090)], 'KFM401');
    assert.match(port[0]?.message ?? '', /port 9090 .* has ports 80/);
    assert.deepEqual(only(patched([...base, route('api', 9090)], port[0]), 'KFM401'), []);
  });

  test('a route to an existing Service port, or to a ServiceEntry host or wildcard: nothing', () => {
    const entry: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'hub', namespace: 'apps' },
      spec: { hosts: ['*.huggingface.co'], ports: [{ number: 443, name: 'tls', protocol: 'TLS' }] },
    };
    assert.deepEqual(only([...base, route('api', 80)], 'KFM401'), []);
    assert.deepEqual(only([...base, entry, route('cdn.huggingface.co', 443)], 'KFM401'), []);
  });

  test('a mirror to a missing host, and a Service not exported to the VirtualService', () => {
    const mirror = virtualService('apps', 'm', {
      hosts: ['api'],
      http: [{ route: [{ destination: { host: 'api' } }], mirror: { host: 'shadow' } }],
    });
    const found = only([...base, mirror], 'KFM401');
    assert.equal(found[0]?.field, 'spec.http[0].mirror.host');
    assert.match(found[0]?.message ?? '', /mirrors to shadow\.apps/);
    const hidden: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'data', annotations: { 'networking.istio.io/exportTo': '.' } },
      spec: { ports: [{ name: 'tcp', port: 5432 }] },
    };
    assert.equal(only([...base, hidden, route('db.data.svc.cluster.local', 5432)], 'KFM401').length, 1);
  });

  test('no port to a Service of several: IST0112', () => {
    const two: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'two', namespace: 'apps' },
      spec: {
        ports: [
          { name: 'http', port: 80 },
          { name: 'grpc', port: 9000 },
        ],
      },
    };
    const found = only([...base, two, route('two')], 'KFM401');
    assert.equal(found[0]?.istio?.[0]?.code, 'IST0112');
    assert.match(found[0]?.message ?? '', /without a port, and it has ports 80, 9000/);
    assert.deepEqual(only([...base, two, route('two', 9000)], 'KFM401'), []);
  });
});

describe('KFM402 conflicting-virtual-services', () => {
  const base = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api')];
  const vs = (
    name: string,
    created: string,
    namespace = 'apps',
    exportTo?: string[],
    host = 'api.apps.svc.cluster.local',
  ) =>
    virtualService(
      namespace,
      name,
      { hosts: [host], http: to('api.apps.svc.cluster.local'), ...(exportTo ? { exportTo } : {}) },
      created,
    );

  test('two mesh VirtualServices for one host: both reported, the older named as the one used', () => {
    const found = only(
      [...base, vs('new', '2026-02-01T00:00:00Z'), vs('old', '2026-01-01T00:00:00Z')],
      'KFM402',
    );
    assert.deepEqual(found.map((f) => f.object.name).sort(), ['new', 'old']);
    const young = found.find((f) => f.object.name === 'new');
    assert.match(young?.message ?? '', /claimed by VirtualService apps\/old.* use the oldest \(apps\/old\)/);
    assert.equal(young?.istio?.[0]?.code, 'IST0109');
  });

  test('exported to namespaces no sidecar shares: nothing; to one both reach: a conflict', () => {
    const other = [ns('team-a', {}), ns('team-b', {})];
    const a = vs('a', '2026-01-01T00:00:00Z', 'team-a', ['.']);
    const b = vs('b', '2026-01-02T00:00:00Z', 'team-b', ['.']);
    assert.deepEqual(only([...base, ...other, a, b], 'KFM402'), []);
    const shared = vs('b', '2026-01-02T00:00:00Z', 'team-b', ['.', 'team-a']);
    assert.equal(only([...base, ...other, a, shared], 'KFM402').length, 2);
  });

  test('a namespace-local host inside a wildcard exported to all', () => {
    const wide = vs('wide', '2026-01-01T00:00:00Z', 'apps', ['*'], '*.example.com');
    const local = vs('local', '2026-01-02T00:00:00Z', 'apps', ['.'], 'a.example.com');
    const found = only([...base, wide, local], 'KFM402');
    assert.equal(found.length, 2);
    assert.match(found[0]?.message ?? '', /split requests between the two by host specificity/);
    const bothPublic = vs('local', '2026-01-02T00:00:00Z', 'apps', ['*'], 'a.example.com');
    assert.deepEqual(only([...base, wide, bothPublic], 'KFM402'), []);
  });

  test('one VirtualService: nothing', () => {
    assert.deepEqual(only([...base, vs('old', '2026-01-01T00:00:00Z')], 'KFM402'), []);
  });
});

describe('KFM405 missing-gateway and KFM406 host-not-on-gateway', () => {
  const base = [ns('apps', {}), ...app('apps', 'api')];
  const bound = (gateways: string[], hosts = ['api.example.com']) =>
    virtualService('apps', 'web', { hosts, gateways, http: to('api') });

  test('a gateway that does not exist: both (nothing serves any host there)', () => {
    const objects = [...base, bound(['nowhere'])];
    const missing = only(objects, 'KFM405');
    assert.equal(missing[0]?.field, 'spec.gateways[0]');
    assert.match(missing[0]?.message ?? '', /gateway apps\/nowhere, which does not exist/);
    assert.equal(only(objects, 'KFM406').length, 1);
  });

  test('a gateway whose servers take none of the hosts, or take them only from another namespace', () => {
    const found = only(
      [...base, gateway('istio-system', 'public', ['other.example.com']), bound(['istio-system/public'])],
      'KFM406',
    );
    assert.match(found[0]?.message ?? '', /takes other\.example\.com and none of api\.example\.com/);
    const scoped = gateway('istio-system', 'public', ['team-b/*.example.com']);
    assert.equal(only([...base, scoped, bound(['istio-system/public'])], 'KFM406').length, 1);
  });

  test('a gateway that takes the host, by wildcard or from this namespace: nothing', () => {
    for (const hosts of [['*.example.com'], ['apps/api.example.com'], ['*/*']])
      assert.deepEqual(
        only(
          [...base, gateway('istio-system', 'public', hosts), bound(['istio-system/public', 'mesh'])],
          'KFM406',
        ),
        [],
        hosts.join(),
      );
  });
});

describe('KFM407 invalid-export-to', () => {
  const base = [ns('apps', {}), ...app('apps', 'api')];
  const exported = (exportTo: string[]) =>
    virtualService('apps', 'web', { hosts: ['api'], exportTo, http: to('api') });

  test('what Istio refuses is an error; a namespace the platform lacks, a warning', () => {
    const messages = (exportTo: string[]) =>
      only([...base, exported(exportTo)], 'KFM407').map((f) => `${f.severity}: ${f.message}`);
    assert.deepEqual(messages(['.', 'apps']), ['error: exportTo lists apps twice (. is its own namespace)']);
    assert.deepEqual(messages(['*', 'apps']), ['error: exportTo lists * beside other entries']);
    assert.deepEqual(messages(['~']), [
      'error: exportTo ~ (no one) is allowed only for ServiceEntries and Services',
    ]);
    assert.deepEqual(messages(['Team_A']), [
      'error: exportTo entry "Team_A" is not ., * or a namespace name',
    ]);
    assert.deepEqual(messages(['bogus']), [
      'warning: exportTo names namespace bogus, which the platform does not have: that entry exports to no one',
    ]);
    assert.deepEqual(messages(['.', 'apps'].slice(1)), []);
  });
});

describe('KFM408 gateway-route-skips-subsets', () => {
  const base = [ns('apps', {}), ...app('apps', 'api'), gateway('istio-system', 'public', ['*'])];
  const split = virtualService('apps', 'api', { hosts: ['api'], http: to('api', { subset: 'v2' }) });
  const ingress = (extra: Record<string, unknown>) =>
    virtualService('apps', 'web', {
      hosts: ['api.example.com'],
      gateways: ['istio-system/public'],
      http: to('api', extra),
    });

  test("a gateway's route without a subset to a host another VirtualService splits", () => {
    const found = only([...base, split, ingress({})], 'KFM408');
    assert.equal(found[0]?.object.name, 'web');
    assert.match(
      found[0]?.message ?? '',
      /VirtualService apps\/api splits api\.apps\.svc\.cluster\.local into subsets/,
    );
    assert.equal(found[0]?.istio?.[0]?.code, 'IST0140');
  });

  test('with a subset, or with no split elsewhere: nothing', () => {
    assert.deepEqual(only([...base, split, ingress({ subset: 'v2' })], 'KFM408'), []);
    assert.deepEqual(only([...base, ingress({})], 'KFM408'), []);
  });
});

describe('KFM701 port-protocol-unknown and KFM702 app-runs-as-proxy-uid', () => {
  const service = (
    namespace: string,
    ports: Record<string, unknown>[],
    labels: Record<string, string> = {},
  ): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'svc', namespace, labels },
    spec: { selector: { app: 'svc' }, ports },
  });

  test('an unnamed or unconventional port is reported (info), a named one or appProtocol is not', () => {
    const found = only(
      [
        service('apps', [
          { port: 8080 },
          { name: 'web', port: 8081 },
          { name: 'http-ui', port: 80 },
          { name: 'x', port: 81, appProtocol: 'grpc' },
        ]),
      ],
      'KFM701',
    );
    assert.deepEqual(
      found.map((f) => `${f.severity} ${f.field} ${f.istio?.[0]?.code}`),
      ['info spec.ports[0] IST0118', 'info spec.ports[1] IST0118'],
    );
  });

  test("Istio's control plane and Kubernetes' system namespaces are left alone", () => {
    assert.deepEqual(only([service('kube-system', [{ port: 8080 }])], 'KFM701'), []);
    assert.deepEqual(only([service('istio-system', [{ port: 8080 }], { istio: 'pilot' })], 'KFM701'), []);
  });

  test('an application container, or a pod, running as 1337; the proxy itself is not reported', () => {
    const deployment = (
      podUid: number | undefined,
      containerUid: number | undefined,
      name = 'app',
    ): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'train', namespace: 'apps' },
      spec: {
        selector: { matchLabels: { app: 'train' } },
        template: {
          metadata: { labels: { app: 'train' } },
          spec: {
            ...(podUid === undefined ? {} : { securityContext: { runAsUser: podUid } }),
            containers: [
              {
                name,
                ...(containerUid === undefined ? {} : { securityContext: { runAsUser: containerUid } }),
              },
            ],
          },
        },
      },
    });
    assert.equal(
      only([deployment(1337, undefined)], 'KFM702')[0]?.field,
      'spec.template.spec.securityContext.runAsUser',
    );
    assert.equal(
      only([deployment(undefined, 1337)], 'KFM702')[0]?.field,
      'spec.template.spec.containers[0].securityContext.runAsUser',
    );
    assert.deepEqual(only([deployment(undefined, 1337, 'istio-proxy')], 'KFM702'), []);
    assert.deepEqual(only([deployment(1000, 1000)], 'KFM702'), []);
  });
});
