/** Gateway API in the simulator: Gateways of class istio with HTTPRoutes, and mesh HTTPRoutes on sidecars. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { bookinfo, istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

function gateway(name: string, listeners: Record<string, unknown>[], ns = 'default'): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: ns },
    spec: { gatewayClassName: 'istio', listeners },
  };
}

function httpRoute(
  name: string,
  spec: Record<string, unknown>,
  created = '2024-01-01T00:00:00Z',
  ns = 'default',
): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: ns, creationTimestamp: created },
    spec,
  };
}

const parent = [{ name: 'public' }];
const backend = (name: string, port = 9080, weight?: number) => ({
  name,
  port,
  ...(weight !== undefined ? { weight } : {}),
});
const base = [
  ...bookinfo(),
  pod('default', 'ratings'),
  service('default', 'ratings', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
  gateway('public', [{ name: 'http', port: 80, protocol: 'HTTP', hostname: '*.example.com' }]),
];

describe('Gateway API gateways of class istio', () => {
  test('a gateway without pods in the input runs as <name>-istio; HTTPRoutes give its routes', () => {
    const objects = [
      ...base,
      httpRoute('site', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [{ backendRefs: [backend('reviews')] }],
      }),
    ];
    const r = trace(objects, { from: 'external', url: 'http://shop.example.com/any' });
    assert.equal(r.response.code, 200);
    assert.equal(r.hops[0]?.workload, 'public-istio');
    assert.equal(r.hops[0]?.virtualHost, 'shop.example.com:80');
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['gateway', 'sidecar'],
    );
  });

  test('PathPrefix matches whole segments; ReplacePrefixMatch rewrites; the header modifier sets headers', () => {
    const objects = [
      ...base,
      httpRoute('api', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/api' } }],
            filters: [
              {
                type: 'URLRewrite',
                urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } },
              },
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: { set: [{ name: 'X-Team', value: 'shop' }] },
              },
            ],
            backendRefs: [backend('ratings')],
          },
          { backendRefs: [backend('reviews')] },
        ],
      }),
    ];
    const api = trace(objects, { from: 'external', url: 'http://shop.example.com/api/items' });
    assert.equal(api.hops[0]?.cluster, 'outbound|9080||ratings.default.svc.cluster.local');
    assert.equal(api.hops[0]?.path, '/v2/items');
    assert.equal(
      trace(objects, { from: 'external', url: 'http://shop.example.com/apis' }).hops[0]?.cluster,
      'outbound|9080||reviews.default.svc.cluster.local',
    );
  });

  test('precedence across HTTPRoutes: exact before prefix, longer prefix first, whatever the creation order', () => {
    const objects = [
      ...base,
      httpRoute(
        'short',
        {
          parentRefs: parent,
          hostnames: ['shop.example.com'],
          rules: [
            { matches: [{ path: { type: 'PathPrefix', value: '/a' } }], backendRefs: [backend('reviews')] },
          ],
        },
        '2024-01-01T00:00:00Z',
      ),
      httpRoute(
        'long',
        {
          parentRefs: parent,
          hostnames: ['shop.example.com'],
          rules: [
            { matches: [{ path: { type: 'PathPrefix', value: '/a/b' } }], backendRefs: [backend('ratings')] },
          ],
        },
        '2024-02-01T00:00:00Z',
      ),
      httpRoute(
        'exact',
        {
          parentRefs: parent,
          hostnames: ['shop.example.com'],
          rules: [{ matches: [{ path: { type: 'Exact', value: '/a' } }], backendRefs: [backend('ratings')] }],
        },
        '2024-03-01T00:00:00Z',
      ),
    ];
    assert.equal(
      trace(objects, { from: 'external', url: 'http://shop.example.com/a/b/c' }).hops[0]?.virtualService,
      'default/long',
    );
    assert.equal(
      trace(objects, { from: 'external', url: 'http://shop.example.com/a' }).hops[0]?.virtualService,
      'default/exact',
    );
    assert.equal(
      trace(objects, { from: 'external', url: 'http://shop.example.com/a/x' }).hops[0]?.virtualService,
      'default/short',
    );
  });

  test('weights split the backends; a missing backend Service answers 500', () => {
    const split = [
      ...base,
      httpRoute('site', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [{ backendRefs: [backend('reviews', 9080, 1), backend('ratings', 9080, 3)] }],
      }),
    ];
    const hop = trace(split, { from: 'external', url: 'http://shop.example.com/' }).hops[0];
    assert.deepEqual(
      hop?.split?.map((s) => s.weight),
      [1, 3],
    );
    assert.equal(hop?.cluster, 'outbound|9080||ratings.default.svc.cluster.local');
    const missing = [
      ...base,
      httpRoute('site', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [{ backendRefs: [backend('gone')] }],
      }),
    ];
    assert.deepEqual(trace(missing, { from: 'external', url: 'http://shop.example.com/' }).response, {
      code: 500,
      flags: 'NC',
    });
  });

  test('a rule without backendRefs answers 404 in the 1.30 releases and 500 before and after; zero weights 500 (V13)', () => {
    const route = (backendRefs?: unknown[]) => [
      ...base,
      httpRoute('site', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [backendRefs ? { backendRefs } : {}],
      }),
    ];
    const code = (objects: KubeObject[], version: string) =>
      trace(objects, { from: 'external', url: 'http://shop.example.com/' }, version).response.code;
    assert.equal(code(route(), '1.29'), 500);
    assert.equal(code(route(), '1.30'), 404);
    assert.equal(code(route(), '1.31'), 500);
    assert.equal(code(route([]), '1.30'), 404);
    for (const version of ['1.29', '1.30', '1.31'])
      assert.equal(
        code(route([backend('reviews', 9080, 0), backend('ratings', 9080, 0)]), version),
        500,
        version,
      );
  });

  test('routes from another namespace attach only when the listener allows it', () => {
    const other = [
      namespace('apps'),
      pod('apps', 'web'),
      service('apps', 'web', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
    ];
    const route = httpRoute(
      'web',
      {
        parentRefs: [{ name: 'public', namespace: 'default' }],
        hostnames: ['web.example.com'],
        rules: [{ backendRefs: [backend('web')] }],
      },
      undefined,
      'apps',
    );
    assert.deepEqual(
      trace([...base, ...other, route], { from: 'external', url: 'http://web.example.com/' }).response,
      { code: 404, flags: 'NR' },
    );
    const open = base.map((o) =>
      o.kind === 'Gateway'
        ? gateway('public', [
            {
              name: 'http',
              port: 80,
              protocol: 'HTTP',
              hostname: '*.example.com',
              allowedRoutes: { namespaces: { from: 'All' } },
            },
          ])
        : o,
    );
    assert.equal(
      trace([...open, ...other, route], { from: 'external', url: 'http://web.example.com/' }).response.code,
      200,
    );
  });

  test('an AuthorizationPolicy with targetRefs to the Gateway applies to its proxy', () => {
    const objects = [
      ...base,
      httpRoute('site', {
        parentRefs: parent,
        hostnames: ['shop.example.com'],
        rules: [{ backendRefs: [backend('reviews')] }],
      }),
      istio('AuthorizationPolicy', 'default', 'only-get', {
        targetRefs: [{ kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'public' }],
        action: 'DENY',
        rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }],
      }),
    ];
    assert.equal(
      trace(objects, { from: 'external', url: 'http://shop.example.com/', method: 'DELETE' }).response.code,
      403,
    );
    assert.equal(trace(objects, { from: 'external', url: 'http://shop.example.com/' }).response.code, 200);
  });
});

describe('mesh HTTPRoutes (parent Service) on sidecars', () => {
  const route = httpRoute('reviews-split', {
    parentRefs: [{ group: '', kind: 'Service', name: 'reviews', port: 9080 }],
    rules: [
      { matches: [{ headers: [{ name: 'x-beta', value: 'yes' }] }], backendRefs: [backend('ratings')] },
      { backendRefs: [backend('reviews')] },
    ],
  });

  test('a client sidecar in the route namespace applies it', () => {
    const objects = [...base, route];
    assert.equal(
      trace(objects, {
        from: 'default/productpage-0',
        url: 'http://reviews:9080/',
        headers: { 'X-Beta': 'yes' },
      }).hops[0]?.cluster,
      'outbound|9080||ratings.default.svc.cluster.local',
    );
    assert.equal(
      trace(objects, { from: 'default/productpage-0', url: 'http://reviews:9080/' }).hops[0]?.cluster,
      'outbound|9080||reviews.default.svc.cluster.local',
    );
  });

  test('a client in an unrelated namespace does not see it', () => {
    const objects = [...base, namespace('other'), pod('other', 'client'), route];
    const hop = trace(objects, {
      from: 'other/client-0',
      url: 'http://reviews.default:9080/',
      headers: { 'X-Beta': 'yes' },
    }).hops[0];
    assert.equal(hop?.route, 'default');
  });
});
