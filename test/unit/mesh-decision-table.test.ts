/**
 * The simulator against decision tables of docs/semantics.md (Sidecar outbound: which cluster a request
 * from a sidecar ends in; Telemetry: the labels each reporter writes), one row per test.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bookinfo, istio, labelsOf, meshConfig, namespace, pod, service, trace } from '../mesh-fixtures.ts';

const from = 'default/productpage-0';

describe('quick decision table (sidecar client, HTTP request)', () => {
  test('Host matches a service virtual host, no VirtualService: outbound|port||svc, the service name', () => {
    const r = trace(bookinfo(), { from, url: 'http://reviews:9080/reviews/1' });
    assert.equal(r.response.code, 200);
    assert.equal(r.hops[0]?.cluster, 'outbound|9080||reviews.default.svc.cluster.local');
    assert.equal(r.hops[0]?.route, 'default');
    assert.equal(labelsOf(r, 'source')['destination_service_name'], 'reviews');
  });

  test('VirtualService route matched: the chosen destination and its service name', () => {
    const objects = [
      ...bookinfo(),
      pod('default', 'ratings'),
      service('default', 'ratings', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
      istio('VirtualService', 'default', 'reviews', {
        hosts: ['reviews'],
        http: [
          { match: [{ uri: { prefix: '/v2' } }], route: [{ destination: { host: 'ratings' } }] },
          { route: [{ destination: { host: 'reviews' } }] },
        ],
      }),
    ];
    const r = trace(objects, { from, url: 'http://reviews:9080/v2/x' });
    assert.equal(r.hops[0]?.cluster, 'outbound|9080||ratings.default.svc.cluster.local');
    assert.equal(r.hops[0]?.route, 'default/reviews#http[0]');
    assert.equal(labelsOf(r, 'source')['destination_service_name'], 'ratings');
  });

  test('VirtualService owns the host but no route matches: 404 NR, Host-header fallback', () => {
    const objects = [
      ...bookinfo(),
      istio('VirtualService', 'default', 'reviews', {
        hosts: ['reviews'],
        http: [{ match: [{ uri: { prefix: '/only' } }], route: [{ destination: { host: 'reviews' } }] }],
      }),
    ];
    const r = trace(objects, { from, url: 'http://reviews:9080/other' });
    assert.deepEqual(r.response, { code: 404, flags: 'NR' });
    const labels = labelsOf(r, 'source');
    assert.equal(labels['destination_service_name'], 'reviews:9080');
    assert.equal(labels['response_flags'], 'NR');
  });

  test('route to an unknown cluster or subset: 503 NC, Host-header fallback', () => {
    const unknownHost = [
      ...bookinfo(),
      istio('VirtualService', 'default', 'reviews', {
        hosts: ['reviews'],
        http: [{ route: [{ destination: { host: 'nowhere' } }] }],
      }),
    ];
    const r = trace(unknownHost, { from, url: 'http://reviews:9080/' });
    assert.deepEqual(r.response, { code: 503, flags: 'NC' });
    assert.equal(labelsOf(r, 'source')['destination_service_name'], 'reviews:9080');
    const unknownSubset = [
      ...bookinfo(),
      istio('VirtualService', 'default', 'reviews', {
        hosts: ['reviews'],
        http: [{ route: [{ destination: { host: 'reviews', subset: 'v9' } }] }],
      }),
    ];
    assert.deepEqual(trace(unknownSubset, { from, url: 'http://reviews:9080/' }).response, {
      code: 503,
      flags: 'NC',
    });
  });

  test('unknown Host on an HTTP port under ALLOW_ANY: PassthroughCluster, the upstream answers', () => {
    const r = trace([...bookinfo(), meshConfig('ALLOW_ANY')], { from, url: 'http://httpbin.org:9080/get' });
    assert.equal(r.response.code, 200);
    assert.equal(r.hops[0]?.cluster, 'PassthroughCluster');
    assert.equal(labelsOf(r, 'source')['destination_service_name'], 'PassthroughCluster');
    assert.equal(r.telemetry[0]?.metric, 'istio_requests_total');
  });

  test('unknown Host on an HTTP port under REGISTRY_ONLY: 502 from block_all, BlackHoleCluster', () => {
    const r = trace([...bookinfo(), meshConfig('REGISTRY_ONLY')], {
      from,
      url: 'http://httpbin.org:9080/get',
    });
    assert.equal(r.response.code, 502);
    assert.equal(r.hops[0]?.route, 'block_all');
    assert.equal(labelsOf(r, 'source')['destination_service_name'], 'BlackHoleCluster');
  });

  test('IP:port with no listener under ALLOW_ANY: TCP PassthroughCluster, istio_tcp_* only', () => {
    const r = trace([...bookinfo(), meshConfig('ALLOW_ANY')], { from, url: 'http://203.0.113.9:7777/' });
    assert.equal(r.response.code, 200);
    assert.equal(r.hops[0]?.listener, 'virtualOutbound');
    assert.equal(r.hops[0]?.cluster, 'PassthroughCluster');
    assert.ok(
      r.telemetry.length > 0 && r.telemetry.every((t) => t.metric.startsWith('istio_tcp_')),
      JSON.stringify(r.telemetry.map((t) => t.metric)),
    );
    assert.equal(r.telemetry[0]?.labels['destination_service_name'], 'PassthroughCluster');
  });

  test('IP:port with no listener under REGISTRY_ONLY: TCP BlackHoleCluster, the connection is closed', () => {
    const r = trace([...bookinfo(), meshConfig('REGISTRY_ONLY')], { from, url: 'http://203.0.113.9:7777/' });
    assert.equal(r.response.code, 0);
    assert.equal(r.hops[0]?.cluster, 'BlackHoleCluster');
    assert.ok(r.telemetry.every((t) => t.metric.startsWith('istio_tcp_')));
    assert.equal(r.telemetry[0]?.labels['destination_service_name'], 'BlackHoleCluster');
  });
});

describe('worked values of the metric labels', () => {
  test('sidecar → sidecar reviews:9080 with mTLS: the source report', () => {
    const labels = labelsOf(trace(bookinfo(), { from, url: 'http://reviews:9080/' }), 'source');
    assert.equal(labels['destination_service'], 'reviews.default.svc.cluster.local');
    assert.equal(labels['destination_service_name'], 'reviews');
    assert.equal(labels['source_principal'], 'spiffe://cluster.local/ns/default/sa/productpage');
    assert.equal(labels['destination_principal'], 'spiffe://cluster.local/ns/default/sa/bookinfo-reviews');
    assert.equal(labels['connection_security_policy'], 'unknown');
  });

  test('the same request, the server report', () => {
    const labels = labelsOf(trace(bookinfo(), { from, url: 'http://reviews:9080/' }), 'destination');
    assert.equal(labels['destination_service'], 'reviews.default.svc.cluster.local');
    assert.equal(labels['destination_service_name'], 'reviews');
    assert.equal(labels['source_principal'], 'spiffe://cluster.local/ns/default/sa/productpage');
    assert.equal(labels['destination_principal'], 'spiffe://cluster.local/ns/default/sa/bookinfo-reviews');
    assert.equal(labels['connection_security_policy'], 'mutual_tls');
    assert.equal(labels['source_workload'], 'productpage-0');
  });

  test('plaintext (PERMISSIVE, the client does not originate mTLS): unknown principals, policy none', () => {
    const objects = [
      ...bookinfo(),
      istio('DestinationRule', 'default', 'reviews', {
        host: 'reviews',
        trafficPolicy: { tls: { mode: 'DISABLE' } },
      }),
    ];
    const labels = labelsOf(trace(objects, { from, url: 'http://reviews:9080/' }), 'destination');
    assert.equal(labels['source_principal'], 'unknown');
    assert.equal(labels['destination_principal'], 'unknown');
    assert.equal(labels['connection_security_policy'], 'none');
  });

  test('ALLOW_ANY to Host httpbin.org: Host as destination_service, PassthroughCluster', () => {
    const objects = [
      ...bookinfo(),
      service('default', 'web', { ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    ];
    const labels = labelsOf(trace(objects, { from, url: 'http://httpbin.org/get' }), 'source');
    assert.equal(labels['destination_service'], 'httpbin.org');
    assert.equal(labels['destination_service_name'], 'PassthroughCluster');
    assert.equal(labels['source_principal'], 'unknown');
    assert.equal(labels['destination_principal'], 'unknown');
  });

  test('REGISTRY_ONLY, unknown host: Host, BlackHoleCluster, 502', () => {
    const objects = [
      ...bookinfo(),
      meshConfig('REGISTRY_ONLY'),
      service('default', 'web', { ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    ];
    const labels = labelsOf(trace(objects, { from, url: 'http://httpbin.org/get' }), 'source');
    assert.equal(labels['destination_service'], 'httpbin.org');
    assert.equal(labels['destination_service_name'], 'BlackHoleCluster');
    assert.equal(labels['response_code'], '502');
  });

  test('inbound port not in any Service: own canonical name, InboundPassthroughCluster (…Ipv4 at 1.20)', () => {
    const reviews = pod('default', 'reviews', { sa: 'bookinfo-reviews', ip: '10.1.9.9' });
    const objects = [namespace('default'), pod('default', 'productpage'), reviews];
    const r = trace(objects, { from, url: 'http://10.1.9.9:5000/' });
    const labels = labelsOf(r, 'destination');
    assert.equal(labels['destination_service'], 'reviews');
    assert.equal(labels['destination_service_name'], 'InboundPassthroughCluster');
    assert.equal(
      labelsOf(trace(objects, { from, url: 'http://10.1.9.9:5000/' }, '1.20'), 'destination')[
        'destination_service_name'
      ],
      'InboundPassthroughClusterIpv4',
    );
  });

  test('gateway, no route: unknown service (no Host fallback), 404 NR', () => {
    const objects = [
      namespace('istio-system', {}),
      pod('istio-system', 'istio-ingressgateway', {
        sidecar: false,
        gateway: true,
        labels: { istio: 'ingressgateway' },
      }),
      service('istio-system', 'istio-ingressgateway', {
        selector: { istio: 'ingressgateway' },
        ports: [{ name: 'http2', port: 80, targetPort: 8080 }],
      }),
      istio('Gateway', 'istio-system', 'public', {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      }),
    ];
    const r = trace(objects, { from: 'external', url: 'http://nothing.example.com/' });
    assert.deepEqual(r.response, { code: 404, flags: 'NR' });
    const labels = labelsOf(r, 'source', 'istio-system/istio-ingressgateway-0');
    assert.equal(labels['destination_service'], 'unknown');
    assert.equal(labels['destination_service_name'], 'unknown');
    assert.equal(labels['response_flags'], 'NR');
  });
});
