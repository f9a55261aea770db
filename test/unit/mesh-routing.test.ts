/** Routing rules of the simulator, one table per rule of docs/semantics.md (Sidecar outbound, Gateways, ExternalName Services). */
import { memoCounts } from '../../src/mesh/memo.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh, compileProxies } from '../../src/mesh/mesh.ts';
import { traceAllPaths, traceRequest } from '../../src/mesh/trace.ts';
import { bookinfo, istio, labelsOf, meshConfig, namespace, pod, service, trace } from '../mesh-fixtures.ts';
import { TraceInputError } from '../../src/mesh/trace/request.ts';

const from = 'default/productpage-0';
const vs = (name: string, spec: Record<string, unknown>, created?: string) =>
  istio('VirtualService', 'default', name, spec, created);

describe('listeners', () => {
  const objects = [
    ...bookinfo(),
    pod('default', 'db'),
    service('default', 'db', { ports: [{ name: 'tcp-db', port: 5432, targetPort: 5432 }], ip: '10.96.1.1' }),
    pod('default', 'legacy'),
    service('default', 'legacy', { ports: [{ port: 8000, targetPort: 8000 }], ip: '10.96.1.2' }),
  ];

  test('an explicit HTTP port shares 0.0.0.0:<port> and routes by Host', () => {
    assert.equal(trace(objects, { from, url: 'http://reviews:9080/' }).hops[0]?.listener, '0.0.0.0_9080');
  });

  test('a TCP port gets a VIP listener: TCP proxy, no HTTP routing, TCP metrics', () => {
    const r = trace(objects, { from, url: 'http://db:5432/' });
    assert.equal(r.hops[0]?.listener, '10.96.1.1_5432');
    assert.equal(r.hops[0]?.cluster, 'outbound|5432||db.default.svc.cluster.local');
    assert.ok(
      r.telemetry.some((t) => t.metric === 'istio_tcp_connections_opened_total' && t.reporter === 'source'),
    );
  });

  test('an unnamed port is sniffed: a per-VIP route table whose virtual host takes any Host', () => {
    const r = trace(objects, { from, url: 'http://legacy:8000/', headers: { Host: 'anything.example' } });
    assert.equal(r.hops[0]?.listener, '10.96.1.2_8000');
    assert.equal(r.hops[0]?.routeConfig, 'legacy.default.svc.cluster.local:8000');
    assert.equal(r.hops[0]?.cluster, 'outbound|8000||legacy.default.svc.cluster.local');
  });
});

describe('virtual host domains', () => {
  const objects = [...bookinfo(), namespace('other'), pod('other', 'client')];
  const cases: [string, string, string, string][] = [
    ['same namespace, bare name', from, 'http://reviews:9080/', 'reviews.default.svc.cluster.local:9080'],
    [
      'same namespace, name.ns',
      from,
      'http://reviews.default:9080/',
      'reviews.default.svc.cluster.local:9080',
    ],
    [
      'FQDN with a port in Host',
      from,
      'http://reviews.default.svc.cluster.local:9080/',
      'reviews.default.svc.cluster.local:9080',
    ],
    [
      'other namespace, name.ns.svc',
      'other/client-0',
      'http://reviews.default.svc:9080/',
      'reviews.default.svc.cluster.local:9080',
    ],
  ];
  for (const [name, client, url, vhost] of cases) {
    test(name, () => assert.equal(trace(objects, { from: client, url }).hops[0]?.virtualHost, vhost));
  }

  test('other namespace, bare name: no such domain there (DNS fails first)', () => {
    const r = trace(objects, { from: 'other/client-0', url: 'http://reviews:9080/' });
    assert.equal(r.response.flags, 'DNS');
  });

  test('a Host header for another namespace short name falls to the catch-all', () => {
    const r = trace(objects, {
      from: 'other/client-0',
      url: 'http://reviews.default:9080/',
      headers: { Host: 'reviews' },
    });
    assert.equal(r.hops[0]?.cluster, 'PassthroughCluster');
  });

  test('the VIP as Host selects the service', () => {
    const ip = (bookinfo()[4]?.['spec'] as { clusterIP: string }).clusterIP;
    const withIp = [
      ...bookinfo(),
      service('default', 'ratings', {
        ip: '10.96.7.7',
        ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
        selector: { app: 'reviews' },
      }),
    ];
    assert.ok(ip);
    assert.equal(
      trace(withIp, { from, url: 'http://10.96.7.7:9080/' }).hops[0]?.virtualHost,
      'ratings.default.svc.cluster.local:9080',
    );
  });
});

describe('which VirtualServices a sidecar uses', () => {
  const route = (host: string) => [{ route: [{ destination: { host } }] }];
  const base = [
    ...bookinfo(),
    pod('default', 'ratings'),
    service('default', 'ratings', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
  ];

  test('gateways without mesh: not used by sidecars; empty gateways: mesh', () => {
    const gatewayOnly = [
      ...base,
      vs('reviews', { hosts: ['reviews'], gateways: ['some-gateway'], http: route('ratings') }),
    ];
    assert.equal(trace(gatewayOnly, { from, url: 'http://reviews:9080/' }).hops[0]?.route, 'default');
    const meshDefault = [...base, vs('reviews', { hosts: ['reviews'], http: route('ratings') })];
    assert.equal(
      trace(meshDefault, { from, url: 'http://reviews:9080/' }).hops[0]?.cluster,
      'outbound|9080||ratings.default.svc.cluster.local',
    );
  });

  test('exportTo "." hides a VirtualService from other namespaces', () => {
    const objects = [
      ...base,
      namespace('other'),
      pod('other', 'client'),
      vs('reviews', { hosts: ['reviews'], exportTo: ['.'], http: route('ratings') }),
    ];
    assert.equal(
      trace(objects, { from: 'other/client-0', url: 'http://reviews.default:9080/' }).hops[0]?.route,
      'default',
    );
    assert.equal(
      trace(objects, { from, url: 'http://reviews:9080/' }).hops[0]?.cluster,
      'outbound|9080||ratings.default.svc.cluster.local',
    );
  });

  test('a Service exported only to its namespace is invisible elsewhere: the catch-all takes it', () => {
    const hidden = [
      namespace('default'),
      namespace('other'),
      pod('other', 'client'),
      pod('default', 'reviews'),
      service('default', 'reviews', {
        annotations: { 'networking.istio.io/exportTo': '.' },
        ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
      }),
      service('other', 'web'),
    ];
    const r = trace([...hidden, meshConfig('REGISTRY_ONLY')], {
      from: 'other/client-0',
      url: 'http://reviews.default:80/',
    });
    assert.equal(r.response.code, 502);
  });

  test('a Sidecar resource narrows egress: services it does not import fall to the catch-all', () => {
    const objects = [
      namespace('default'),
      namespace('other'),
      pod('default', 'productpage'),
      pod('other', 'api'),
      service('other', 'api'),
      service('default', 'local'),
      meshConfig('REGISTRY_ONLY'),
      istio('Sidecar', 'default', 'default', { egress: [{ hosts: ['./*'] }] }),
    ];
    assert.equal(trace(objects, { from, url: 'http://api.other/' }).response.code, 502);
    const open = objects.filter((o) => o.kind !== 'Sidecar');
    assert.equal(trace(open, { from, url: 'http://api.other/' }).response.code, 200);
  });

  test('several VirtualServices for one host: the oldest wins on sidecars, the other is ignored', () => {
    const objects = [
      ...base,
      vs('newer', { hosts: ['reviews'], http: route('reviews') }, '2024-02-01T00:00:00Z'),
      vs('older', { hosts: ['reviews'], http: route('ratings') }, '2024-01-01T00:00:00Z'),
    ];
    const hop = trace(objects, { from, url: 'http://reviews:9080/' }).hops[0];
    assert.equal(hop?.virtualService, 'default/older');
    assert.equal(hop?.cluster, 'outbound|9080||ratings.default.svc.cluster.local');
  });

  test('first match wins; per-match sourceLabels and port narrow a match', () => {
    const objects = [
      ...base,
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          { match: [{ sourceLabels: { app: 'nobody' } }], route: [{ destination: { host: 'ratings' } }] },
          { match: [{ port: 1234 }], route: [{ destination: { host: 'ratings' } }] },
          {
            match: [{ headers: { 'end-user': { exact: 'jason' } } }],
            route: [{ destination: { host: 'ratings' } }],
          },
          { route: [{ destination: { host: 'reviews' } }] },
        ],
      }),
    ];
    assert.equal(
      trace(objects, { from, url: 'http://reviews:9080/' }).hops[0]?.route,
      'default/reviews#http[3]',
    );
    assert.equal(
      trace(objects, { from, url: 'http://reviews:9080/', headers: { 'End-User': 'jason' } }).hops[0]?.route,
      'default/reviews#http[2]',
    );
  });
});

describe('rewrites and destinations', () => {
  const base = [
    ...bookinfo(),
    pod('default', 'ratings'),
    service('default', 'ratings', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
  ];

  test('prefix rewrite replaces the matched prefix; authority rewrite and Host header set', () => {
    const objects = [
      ...base,
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          {
            match: [{ uri: { prefix: '/api/v1/' } }],
            rewrite: { uri: '/' },
            headers: { request: { set: { Host: 'ratings.internal' } } },
            route: [{ destination: { host: 'ratings' } }],
          },
        ],
      }),
    ];
    const hop = trace(objects, { from, url: 'http://reviews:9080/api/v1/items' }).hops[0];
    assert.equal(hop?.path, '/items');
    assert.equal(hop?.authority, 'ratings.internal');
  });

  test('regex rewrite with a captured group', () => {
    const objects = [
      ...base,
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          {
            match: [{ uri: { regex: '/serving/ns/m(/v1/models/[\\w-]+:explain)$' } }],
            rewrite: {
              uriRegexRewrite: { match: '/serving/ns/m(/v1/models/[\\w-]+:explain)$', rewrite: '\\1' },
            },
            route: [{ destination: { host: 'ratings' } }],
          },
        ],
      }),
    ];
    assert.equal(
      trace(objects, { from, url: 'http://reviews:9080/serving/ns/m/v1/models/m:explain' }).hops[0]?.path,
      '/v1/models/m:explain',
    );
  });

  test('a weighted split reports every cluster and traces the heaviest', () => {
    const objects = [
      ...base,
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          {
            route: [
              { destination: { host: 'reviews' }, weight: 20 },
              { destination: { host: 'ratings' }, weight: 80 },
            ],
          },
        ],
      }),
    ];
    const hop = trace(objects, { from, url: 'http://reviews:9080/' }).hops[0];
    assert.deepEqual(
      hop?.split?.map((s) => s.weight),
      [20, 80],
    );
    assert.equal(hop?.cluster, 'outbound|9080||ratings.default.svc.cluster.local');
  });

  test('a destination without port takes the service’s only port', () => {
    const objects = [
      ...base,
      vs('reviews', { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'ratings' } }] }] }),
    ];
    assert.equal(
      trace(objects, { from, url: 'http://reviews:9080/' }).hops[0]?.cluster,
      'outbound|9080||ratings.default.svc.cluster.local',
    );
  });

  test('redirect, direct response and fault abort are answered by the proxy', () => {
    const objects = [
      ...base,
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          { match: [{ uri: { exact: '/old' } }], redirect: { uri: '/new' } },
          { match: [{ uri: { exact: '/teapot' } }], directResponse: { status: 418 } },
          {
            fault: { abort: { httpStatus: 503, percentage: { value: 100 } } },
            route: [{ destination: { host: 'reviews' } }],
          },
        ],
      }),
    ];
    assert.equal(trace(objects, { from, url: 'http://reviews:9080/old' }).response.code, 301);
    assert.equal(trace(objects, { from, url: 'http://reviews:9080/teapot' }).response.code, 418);
    assert.deepEqual(trace(objects, { from, url: 'http://reviews:9080/x' }).response, {
      code: 503,
      flags: 'FI',
    });
  });
});

describe('gateways', () => {
  const gatewayPod = pod('istio-system', 'istio-ingressgateway', {
    sidecar: false,
    gateway: true,
    labels: { istio: 'ingressgateway' },
    sa: 'istio-ingressgateway-service-account',
  });
  const base = [
    ...bookinfo(),
    gatewayPod,
    service('istio-system', 'istio-ingressgateway', {
      selector: { istio: 'ingressgateway' },
      ports: [{ name: 'http2', port: 80, targetPort: 8080 }],
    }),
    istio('Gateway', 'default', 'public', {
      selector: { istio: 'ingressgateway' },
      servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*.example.com'] }],
    }),
  ];

  test('port translation: server 80 listens on the Service target port 8080; host intersection gives the virtual host', () => {
    const objects = [
      ...base,
      vs('site', {
        hosts: ['reviews.example.com'],
        gateways: ['public'],
        http: [{ route: [{ destination: { host: 'reviews', port: { number: 9080 } } }] }],
      }),
    ];
    const r = trace(objects, { from: 'external', url: 'http://reviews.example.com/x' });
    assert.equal(r.hops[0]?.listener, '0.0.0.0_8080');
    assert.equal(r.hops[0]?.routeConfig, 'http.8080');
    assert.equal(r.hops[0]?.virtualHost, 'reviews.example.com:8080');
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['gateway', 'sidecar'],
    );
    assert.equal(r.response.code, 200);
  });

  test('VirtualServices for one host merge on gateways, catch-all routes last', () => {
    const objects = [
      ...base,
      vs(
        'catchall',
        {
          hosts: ['reviews.example.com'],
          gateways: ['public'],
          http: [{ route: [{ destination: { host: 'reviews', port: { number: 9080 } } }] }],
        },
        '2024-01-01T00:00:00Z',
      ),
      vs(
        'api',
        {
          hosts: ['reviews.example.com'],
          gateways: ['public'],
          http: [
            {
              match: [{ uri: { prefix: '/api' } }],
              route: [{ destination: { host: 'reviews', port: { number: 9080 } } }],
            },
          ],
        },
        '2024-02-01T00:00:00Z',
      ),
    ];
    assert.equal(
      trace(objects, { from: 'external', url: 'http://reviews.example.com/api/x' }).hops[0]?.virtualService,
      'default/api',
    );
    assert.equal(
      trace(objects, { from: 'external', url: 'http://reviews.example.com/other' }).hops[0]?.virtualService,
      'default/catchall',
    );
  });

  test('a Service labelled to disable port translation is skipped', () => {
    const objects = [
      ...base.filter((o) => !(o.kind === 'Service' && o.metadata.name === 'istio-ingressgateway')),
      service('istio-system', 'istio-ingressgateway', {
        selector: { istio: 'ingressgateway' },
        labels: { 'experimental.istio.io/disable-gateway-port-translation': 'true' },
        ports: [{ name: 'http2', port: 80, targetPort: 8080 }],
      }),
      vs('site', {
        hosts: ['reviews.example.com'],
        gateways: ['public'],
        http: [{ route: [{ destination: { host: 'reviews', port: { number: 9080 } } }] }],
      }),
    ];
    assert.equal(
      trace(objects, { from: 'external', url: 'http://reviews.example.com/' }).hops[0]?.listener,
      '0.0.0.0_80',
    );
  });

  test('external requests for a host no gateway serves are refused as bad input', () => {
    assert.throws(() => trace(base, { from: 'external', url: 'http://other.org/' }), TraceInputError);
  });
});

describe('ExternalName Services by Istio version', () => {
  const objects = [
    namespace('default'),
    pod('default', 'client'),
    pod('default', 'backend'),
    service('default', 'backend', { ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'alias', namespace: 'default' },
      spec: {
        type: 'ExternalName',
        externalName: 'backend.default.svc.cluster.local',
        ports: [{ name: 'http', port: 80 }],
      },
    },
    pod('default', 'other'),
    service('default', 'other', { ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    vs('alias-route', {
      hosts: ['alias.default.svc.cluster.local'],
      http: [{ route: [{ destination: { host: 'other' } }] }],
    }),
  ];
  const input = { from: 'default/client-0', url: 'http://alias.default/' };

  test('1.20: an ExternalName is its own DNS service; the VS on its host applies', () => {
    const hop = trace(objects, input, '1.20').hops[0];
    assert.equal(hop?.virtualService, 'default/alias-route');
  });

  test('1.21–1.23: aliases are skipped; the VS host is literal (FQDN only), the short name rides on the target', () => {
    const hop = trace(objects, input, '1.22').hops[0];
    assert.equal(hop?.virtualHost, 'backend.default.svc.cluster.local:80');
    assert.equal(hop?.cluster, 'outbound|80||backend.default.svc.cluster.local');
    assert.equal(
      trace(objects, { ...input, url: 'http://alias.default.svc.cluster.local/' }, '1.22').hops[0]
        ?.virtualService,
      'default/alias-route',
    );
  });

  test('1.24+: an alias declaring the port is a registry service; its short names reach the VS', () => {
    const hop = trace(objects, input, '1.24').hops[0];
    assert.equal(hop?.virtualService, 'default/alias-route');
    assert.equal(hop?.cluster, 'outbound|80||other.default.svc.cluster.local');
  });
});

describe('compiling and input errors', () => {
  test('compileProxies builds every table once; traces reuse them', () => {
    const mesh = compileMesh(Snapshot.of(bookinfo()));
    assert.ok(compileProxies(mesh) >= 1);
    const before = memoCounts(mesh);
    traceRequest(mesh, { from, url: 'http://reviews:9080/' });
    traceRequest(mesh, { from, url: 'http://reviews:9080/' });
    const grown = [...memoCounts(mesh)]
      .filter(([name, n]) => n > (before.get(name) ?? 0))
      .map(([name]) => name);
    assert.deepEqual(
      grown.sort(),
      ['inbound-ports', 'inbound-services'],
      'only the inbound indexes are added',
    );
  });

  test('an unknown workload names the closest ones; a bad URL is refused', () => {
    assert.throws(
      () => trace(bookinfo(), { from: 'default/productpag', url: 'http://reviews:9080/' }),
      /no such workload; closest: default\/productpage-0/,
    );
    assert.throws(() => trace(bookinfo(), { from, url: 'reviews' }), /is not a URL/);
    assert.throws(
      () => trace(bookinfo(), { from: 'nonsense', url: 'http://reviews:9080/' }),
      /NAMESPACE\/WORKLOAD/,
    );
  });

  test('a label set reports the source workload of the client', () => {
    assert.equal(
      labelsOf(trace(bookinfo(), { from, url: 'http://reviews:9080/' }), 'source')['source_workload'],
      'productpage-0',
    );
  });
});

describe('all paths of weighted splits', () => {
  test('one trace per destination, shares summing to 1', () => {
    const objects = [
      ...bookinfo(),
      pod('default', 'ratings'),
      service('default', 'ratings', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          {
            route: [
              { destination: { host: 'reviews' }, weight: 75 },
              { destination: { host: 'ratings' }, weight: 25 },
            ],
          },
        ],
      }),
    ];
    const mesh = compileMesh(Snapshot.of(objects));
    const paths = traceAllPaths(mesh, { from, url: 'http://reviews:9080/' });
    assert.deepEqual(
      paths.map((p) => p.hops[0]?.cluster),
      [
        'outbound|9080||reviews.default.svc.cluster.local',
        'outbound|9080||ratings.default.svc.cluster.local',
      ],
    );
    assert.deepEqual(
      paths.map((p) => p.share),
      [0.75, 0.25],
    );
    assert.equal(
      traceRequest(mesh, { from, url: 'http://reviews:9080/' }).hops[0]?.cluster,
      'outbound|9080||reviews.default.svc.cluster.local',
    );
  });
});
