/** Each analyzer rule on a configuration that breaks it and one that does not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import type { Finding } from '../../src/model/finding.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { analyze, atOrAbove } from '../../src/analyze/analyze.ts';

import { waypoint as openWaypoint } from '../mesh-fixtures.ts';
import { app, codes, ns, only, patched, policy, waypoint } from './analyze-fixtures.ts';

describe('KFM101 passthrough-for-mesh-clients', () => {
  const base = [
    ns('models', { 'istio-injection': 'enabled' }),
    ns('istio-system', {}),
    ...app('models', 'client'),
    ...app('istio-system', 'local-gateway'),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'iris', namespace: 'models' },
      spec: { type: 'ExternalName', externalName: 'local-gateway.istio-system.svc.cluster.local' },
    },
  ];
  const vs = (gateways: string[]): KubeObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'iris', namespace: 'models' },
    spec: {
      gateways,
      hosts: ['iris.models.svc.cluster.local'],
      http: [{ route: [{ destination: { host: 'local-gateway.istio-system.svc.cluster.local' } }] }],
    },
  });
  const gateway: KubeObject = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'Gateway',
    metadata: { name: 'local', namespace: 'istio-system' },
    spec: {
      selector: { app: 'local-gateway' },
      servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
    },
  };

  test('a host routed only at gateways: found by tracing, with the trace at 1.20 through PassthroughCluster', () => {
    const found = only([...base, gateway, vs(['istio-system/local'])], 'KFM101');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.field, 'spec.gateways');
    assert.match(found[0]?.message ?? '', /routes iris\.models\.svc\.cluster\.local only at gateways/);
    assert.ok(
      found[0]?.evidence?.some((e) => /Istio 1\.20: sidecar models\/client \[PassthroughCluster\]/.test(e)),
    );
    assert.ok(found[0]?.fix?.includes('mesh'));
    assert.deepEqual(only(patched([...base, gateway, vs(['istio-system/local'])], found[0]), 'KFM101'), []);
  });

  test("KServe's shape: the patch binds the internal host's match to mesh, not the external one", () => {
    const kserve: KubeObject = {
      ...vs(['istio-system/local', 'kubeflow/kubeflow-gateway']),
      spec: {
        gateways: ['istio-system/local', 'kubeflow/kubeflow-gateway'],
        hosts: ['iris.models.svc.cluster.local', 'iris.models.example.com'],
        http: [
          {
            match: [
              {
                authority: { regex: '^iris\\.models\\.example\\.com(?::\\d{1,5})?$' },
                gateways: ['kubeflow/kubeflow-gateway'],
              },
              {
                authority: { regex: '^iris\\.models(\\.svc(\\.cluster\\.local)?)?(?::\\d{1,5})?$' },
                gateways: ['istio-system/local'],
              },
            ],
            route: [{ destination: { host: 'local-gateway.istio-system.svc.cluster.local' } }],
          },
        ],
      },
    };
    const found = only([...base, gateway, kserve], 'KFM101');
    assert.deepEqual(found[0]?.patch, [
      { op: 'add', path: '/spec/gateways/-', value: 'mesh' },
      { op: 'add', path: '/spec/http/0/match/1/gateways/-', value: 'mesh' },
    ]);
    assert.deepEqual(only(patched([...base, gateway, kserve], found[0]), 'KFM101'), []);
  });

  test('bound to mesh too: nothing found', () => {
    assert.deepEqual(only([...base, gateway, vs(['istio-system/local', 'mesh'])], 'KFM101'), []);
  });
});

describe('KFM201 l7-policy-without-waypoint', () => {
  const base = [ns('apps', { 'istio.io/dataplane-mode': 'ambient' }), ...app('apps', 'api')];
  const l7 = policy('apps', 'get-only', {
    selector: { matchLabels: { app: 'api' } },
    rules: [{ to: [{ operation: { methods: ['GET'] } }] }],
  });

  test('an L7-only ALLOW selecting ambient pods: ztunnel denies everything', () => {
    const found = only([...base, l7], 'KFM201');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'error');
    assert.equal(found[0]?.field, 'spec.rules[0]');
    assert.match(found[0]?.message ?? '', /refuses every connection/);
  });

  test('a DENY on the remote address, a CUSTOM and an AUDIT policy on ambient pods: ztunnel does not enforce them', () => {
    const remote = policy('apps', 'no-remote', {
      selector: { matchLabels: { app: 'api' } },
      action: 'DENY',
      rules: [{ from: [{ source: { remoteIpBlocks: ['203.0.113.0/24'] } }] }],
    });
    const custom = policy('apps', 'ext-authz', {
      selector: { matchLabels: { app: 'api' } },
      action: 'CUSTOM',
      provider: { name: 'oauth2-proxy' },
      rules: [{ to: [{ operation: { ports: ['8080'] } }] }],
    });
    const audit = policy('apps', 'audit', {
      selector: { matchLabels: { app: 'api' } },
      action: 'AUDIT',
      rules: [{}],
    });
    const found = only([...base, remote, custom, audit], 'KFM201');
    const byName = (name: string) => found.find((f) => f.object.name === name);
    assert.match(byName('no-remote')?.message ?? '', /source\.remoteIpBlocks.*what they deny gets through/);
    assert.equal(byName('ext-authz')?.field, 'spec.action');
    assert.match(byName('ext-authz')?.message ?? '', /provider is never asked/);
    assert.match(byName('audit')?.message ?? '', /nothing is audited/);
  });

  test('the same policy with targetRefs to a waypoint, or on sidecar pods: nothing found', () => {
    const targeted = policy('apps', 'get-only', {
      targetRefs: [{ group: '', kind: 'Service', name: 'api' }],
      rules: [{ to: [{ operation: { methods: ['GET'] } }] }],
    });
    assert.deepEqual(only([...base, targeted], 'KFM201'), []);
    assert.deepEqual(
      only([ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api'), l7], 'KFM201'),
      [],
    );
  });
});

describe('KFM205 pod-address-skips-waypoint', () => {
  const ambient = { 'istio.io/dataplane-mode': 'ambient' };
  const base = [
    ns('apps', { ...ambient, 'istio.io/use-waypoint': 'waypoint' }),
    ns('client', ambient),
    ...app('apps', 'api'),
    ...app('client', 'caller'),
    waypoint('apps'),
    policy('apps', 'alice-only', {
      targetRefs: [{ group: '', kind: 'Service', name: 'api' }],
      rules: [{ when: [{ key: 'request.headers[x-user]', values: ['alice'] }] }],
    }),
  ];
  const allowAll = policy('apps', 'allow-all', { selector: { matchLabels: { app: 'api' } }, rules: [{}] });
  const waypointOnly = policy('apps', 'api-l4', {
    selector: { matchLabels: { app: 'api' } },
    rules: [{ from: [{ source: { principals: ['cluster.local/ns/apps/sa/waypoint'] } }] }],
  });

  test('a ztunnel ALLOW that admits callers of the pod address, which the service waypoint never sees: the traces prove it', () => {
    const found = only([...base, waypointOnly, allowAll], 'KFM205');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.object.name, 'allow-all');
    assert.equal(found[0]?.severity, 'error');
    assert.match(
      found[0]?.message ?? '',
      /admits client\/caller's connections to the pods of apps\/api addressed directly/,
    );
    assert.match(
      found[0]?.evidence?.[0] ?? '',
      /^GET http:\/\/api\.apps\.svc\.cluster\.local:80\/ from client\/caller: .*waypoint apps\/waypoint → 403$/,
    );
    assert.match(
      found[0]?.evidence?.[1] ?? '',
      /from client\/caller: ztunnel istio-system\/ztunnel → ztunnel istio-system\/ztunnel → 200/,
    );
  });

  test('ztunnel admitting only the waypoint, or a waypoint that serves workloads too: nothing found', () => {
    assert.deepEqual(only([...base, waypointOnly], 'KFM205'), []);
    const forAll = base.map((o) =>
      o.kind === 'Gateway'
        ? { ...o, metadata: { ...o.metadata, labels: { 'istio.io/waypoint-for': 'all' } } }
        : o,
    );
    assert.deepEqual(only([...forAll, waypointOnly, allowAll], 'KFM205'), []);
  });
});

describe('KFM202 missing-waypoint and KFM203 unused-waypoint', () => {
  test('use-waypoint naming no waypoint, and a targetRef to a missing Service', () => {
    const objects = [
      ns('apps', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
      ...app('apps', 'api'),
      policy('apps', 'p', { targetRefs: [{ group: '', kind: 'Service', name: 'gone' }], rules: [{}] }),
    ];
    assert.deepEqual(codes(objects), ['KFM202 Namespace /apps', 'KFM202 AuthorizationPolicy apps/p']);
    // A RequestAuthentication's targetRef is read as its own kind's (it once stopped analyze whole).
    const jwt: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'RequestAuthentication',
      metadata: { name: 'jwt', namespace: 'apps' },
      spec: { targetRef: { group: '', kind: 'Service', name: 'gone' } },
    };
    assert.ok(codes([...objects, jwt]).includes('KFM202 RequestAuthentication apps/jwt'));
  });

  test('the waypoint there and used: nothing; there and unused: KFM203', () => {
    const used = [
      ns('apps', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
      ...app('apps', 'api'),
      waypoint('apps'),
    ];
    assert.deepEqual(codes(used), []);
    const unused = [
      ns('apps', { 'istio.io/dataplane-mode': 'ambient' }),
      ...app('apps', 'api'),
      waypoint('apps'),
    ];
    assert.deepEqual(codes(unused), ['KFM203 Gateway apps/waypoint']);
  });
});

describe('KFM102 internal-host-not-bound-to-mesh', () => {
  const base = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api')];
  const vs = (gateways: string[]): KubeObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'api', namespace: 'apps' },
    spec: {
      gateways,
      hosts: ['api.apps.svc.cluster.local'],
      http: [{ timeout: '5s', route: [{ destination: { host: 'api' } }] }],
    },
  });
  const gateway: KubeObject = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'apps' },
    spec: {
      selector: { app: 'api' },
      servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
    },
  };

  test('a cluster Service routed only at a gateway', () => {
    const found = only([...base, gateway, vs(['web'])], 'KFM102');
    assert.equal(found.length, 1);
    assert.match(
      found[0]?.message ?? '',
      /api\.apps\.svc\.cluster\.local \(Service apps\/api\) only at gateways \(apps\/web\)/,
    );
    assert.deepEqual(only(patched([...base, gateway, vs(['web'])], found[0]), 'KFM102'), []);
  });

  test('bound to mesh as well: nothing', () => {
    assert.deepEqual(only([...base, gateway, vs(['web', 'mesh'])], 'KFM102'), []);
  });
});

describe('KFM204 sidecar-client-skips-waypoint', () => {
  const objects = (clientMode: Record<string, string>): KubeObject[] => [
    ns('apps', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
    ns('clients', clientMode),
    ...app('apps', 'api'),
    ...app('clients', 'caller'),
    waypoint('apps'),
    policy('apps', 'api-get', {
      targetRefs: [{ group: '', kind: 'Service', name: 'api' }],
      rules: [{ to: [{ operation: { methods: ['GET'] } }] }],
    }),
  ];

  test('a sidecar client reaches the Service without the waypoint: found, with its trace', () => {
    const found = only(objects({ 'istio-injection': 'enabled' }), 'KFM204');
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /clients with sidecars \(such as clients\/caller\)/);
    assert.match(found[0]?.evidence?.[0] ?? '', /sidecar clients\/caller → ztunnel/);
  });

  test('no sidecar clients: nothing', () => {
    assert.deepEqual(only(objects({ 'istio.io/dataplane-mode': 'ambient' }), 'KFM204'), []);
  });
});

describe('KFM403 export-hides-route', () => {
  const base: KubeObject[] = [
    ns('apps', { 'istio-injection': 'enabled' }),
    ns('istio-system', {}),
    ...app('apps', 'api'),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'ingress', namespace: 'istio-system' },
      spec: {
        selector: { matchLabels: { istio: 'ingressgateway' } },
        template: {
          metadata: { labels: { istio: 'ingressgateway' } },
          spec: { containers: [{ name: 'istio-proxy', args: ['proxy', 'router'] }] },
        },
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'Gateway',
      metadata: { name: 'web', namespace: 'apps' },
      spec: {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      },
    },
  ];
  const vs = (exportTo: string[]): KubeObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'api', namespace: 'apps' },
    spec: {
      gateways: ['web'],
      exportTo,
      hosts: ['*'],
      http: [{ route: [{ destination: { host: 'api' } }] }],
    },
  });

  test("exported only to its own namespace while the gateway's pods run in istio-system", () => {
    const found = only([...base, vs(['.'])], 'KFM403');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.field, 'spec.exportTo');
    assert.match(found[0]?.message ?? '', /pods run in istio-system/);
    assert.deepEqual(found[0]?.patch, [{ op: 'add', path: '/spec/exportTo/-', value: 'istio-system' }]);
    assert.deepEqual(only(patched([...base, vs(['.'])], found[0]), 'KFM403'), []);
  });

  test('exported everywhere: nothing', () => {
    assert.deepEqual(only([...base, vs(['*'])], 'KFM403'), []);
  });
});

describe('KFM501 mesh-route-cost', () => {
  const objects = (sidecar: boolean): KubeObject[] => [
    ns('apps', { 'istio-injection': 'enabled' }),
    ns('other', { 'istio-injection': 'enabled' }),
    ...app('apps', 'api'),
    ...app('other', 'client'),
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'api', namespace: 'apps' },
      spec: { hosts: ['api'], http: [{ route: [{ destination: { host: 'api' } }] }] },
    },
    ...(sidecar
      ? [
          {
            apiVersion: 'networking.istio.io/v1',
            kind: 'Sidecar',
            metadata: { name: 'default', namespace: 'other' },
            spec: { egress: [{ hosts: ['./*'] }] },
          },
        ]
      : []),
  ];

  test("a namespace's mesh routes in other namespaces' sidecars: an info finding with the counts", () => {
    const found = only(objects(false), 'KFM501');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'info');
    assert.match(
      found[0]?.message ?? '',
      /1 mesh-bound VirtualService\(s\) of namespace apps \(1 hosts, 1 routes\) are in the configuration of up to 2 sidecars in 2 namespaces \(other besides apps\)/,
    );
  });

  test('a Sidecar that keeps the other namespace to itself: nothing', () => {
    assert.deepEqual(only(objects(true), 'KFM501'), []);
  });
});

describe('analyze', () => {
  test('findings in file order; --fail-on thresholds', () => {
    const found = analyze(
      Snapshot.of([
        ns('apps', { 'istio.io/dataplane-mode': 'ambient' }),
        ...app('apps', 'api'),
        waypoint('apps'),
      ]),
    );
    assert.equal(found.length, 1);
    const [warning] = found as [Finding];
    assert.equal(atOrAbove(warning, 'error'), false);
    assert.equal(atOrAbove(warning, 'warning'), true);
    assert.equal(atOrAbove(warning, 'never'), false);
  });
});

describe('finding codes', () => {
  test("the analyzer's rule codes are its own: none is a code the render or migration findings use", async () => {
    const { rules } = await import('../../src/analyze/analyze.ts');
    const { ServerlessInAmbient } = await import('../../src/kserve/ambient.ts');
    const { AmbientToSidecarWithoutHbone, SidecarCallerSkipsWaypoint } =
      await import('../../src/kubeflow/mixed-mode.ts');
    const codes = rules.map((r) => r.code);
    assert.equal(new Set(codes).size, codes.length, 'each rule code once');
    for (const code of [ServerlessInAmbient, AmbientToSidecarWithoutHbone, SidecarCallerSkipsWaypoint])
      assert.ok(!codes.includes(code), `${code} is both a rule and a render finding`);
  });
});

describe('KFM211 policy-target-not-enforced, KFM212 waypoint-refuses-traffic', () => {
  const target = policy('apps', 'p', {
    targetRefs: [{ group: '', kind: 'Service', name: 'api' }],
    rules: [{}],
  });
  const used = [
    ns('apps', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
    ...app('apps', 'api'),
    waypoint('apps'),
    target,
  ];

  test('a policy by target on a Service its waypoint serves: nothing; without the waypoint: KFM211', () => {
    assert.deepEqual(
      codes(used).filter((c) => c.startsWith('KFM211') || c.startsWith('KFM212')),
      [],
    );
    const without = [ns('apps', { 'istio.io/dataplane-mode': 'ambient' }), ...app('apps', 'api'), target];
    assert.deepEqual(codes(without), ['KFM211 AuthorizationPolicy apps/p']);
    const sidecars = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api'), target];
    assert.deepEqual(codes(sidecars), ['KFM211 AuthorizationPolicy apps/p']);
  });

  test("another namespace's waypoint that admits only its own: KFM212 on the label, KFM211 on the policy", () => {
    const elsewhere = [
      ns('apps', {
        'istio.io/dataplane-mode': 'ambient',
        'istio.io/use-waypoint': 'waypoint',
        'istio.io/use-waypoint-namespace': 'shared',
      }),
      ns('shared', { 'istio.io/dataplane-mode': 'ambient' }),
      ...app('apps', 'api'),
      waypoint('shared'),
      target,
    ];
    assert.deepEqual(codes(elsewhere).sort(), [
      'KFM211 AuthorizationPolicy apps/p',
      'KFM212 Namespace /apps',
    ]);
    const admitted = elsewhere.map((o) =>
      o.kind === 'Gateway' ? openWaypoint('shared', 'waypoint', {}, true) : o,
    );
    assert.deepEqual(codes(admitted), []);
  });
});
