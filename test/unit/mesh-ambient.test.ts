/** The ambient data plane, one table per rule of docs/semantics.md (Ambient enrollment and waypoints, ztunnel, Waypoints, V1–V3, V11). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { istio, labelsOf, namespace, pod, service, trace, waypoint } from '../mesh-fixtures.ts';

const ambientNs = (name: string, labels: Record<string, string> = {}) =>
  namespace(name, { 'istio.io/dataplane-mode': 'ambient', ...labels });
const policy = (ns: string, name: string, spec: Record<string, unknown>) =>
  istio('AuthorizationPolicy', ns, name, spec);
const from = 'client/client-0';
const url = 'http://app.apps/';

/** A client and a server in ambient namespaces; `apps` uses the waypoint `waypoint` unless told otherwise. */
function platform(
  options: { useWaypoint?: boolean; extra?: KubeObject[]; serviceLabels?: Record<string, string> } = {},
): KubeObject[] {
  return [
    ambientNs('client'),
    ambientNs('apps', options.useWaypoint === false ? {} : { 'istio.io/use-waypoint': 'waypoint' }),
    pod('client', 'client', { ambient: true }),
    pod('apps', 'app', { ambient: true }),
    service('apps', 'app', { labels: options.serviceLabels ?? {} }),
    waypoint('apps'),
    ...(options.extra ?? []),
  ];
}

const kinds = (objects: KubeObject[], version?: string) =>
  trace(objects, { from, url }, version).hops.map((h) => h.kind);

describe('enrollment and ztunnel routing', () => {
  test('a service with a waypoint: ztunnel → waypoint → ztunnel', () => {
    assert.deepEqual(kinds(platform()), ['ztunnel', 'waypoint', 'ztunnel']);
  });

  test('no waypoint: ztunnel → ztunnel over HBONE', () => {
    const r = trace(platform({ useWaypoint: false }), { from, url });
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'ztunnel'],
    );
    assert.equal(r.hops[0]?.tls, 'HBONE');
  });

  test('the Service’s own label beats the namespace’s; none opts out', () => {
    assert.deepEqual(kinds(platform({ serviceLabels: { 'istio.io/use-waypoint': 'none' } })), [
      'ztunnel',
      'ztunnel',
    ]);
    const other = waypoint('apps', 'special');
    assert.equal(
      trace(platform({ serviceLabels: { 'istio.io/use-waypoint': 'special' }, extra: [other] }), {
        from,
        url,
      }).hops[1]?.workload,
      'special',
    );
  });

  test('a waypoint for workloads only does not take service traffic', () => {
    const objects = platform().map((o) =>
      o.kind === 'Gateway' ? waypoint('apps', 'waypoint', { 'istio.io/waypoint-for': 'workload' }) : o,
    );
    assert.deepEqual(kinds(objects), ['ztunnel', 'ztunnel']);
  });

  test('a waypoint in another namespace serves only when its listener allows it', () => {
    const base = [
      ambientNs('client'),
      ambientNs('apps', { 'istio.io/use-waypoint': 'shared', 'istio.io/use-waypoint-namespace': 'infra' }),
      pod('client', 'client', { ambient: true }),
      pod('apps', 'app', { ambient: true }),
      service('apps', 'app'),
    ];
    assert.deepEqual(kinds([...base, waypoint('infra', 'shared')]), ['ztunnel', 'ztunnel']);
    assert.deepEqual(kinds([...base, waypoint('infra', 'shared', {}, true)]), [
      'ztunnel',
      'waypoint',
      'ztunnel',
    ]);
  });

  test('plaintext to a pod that can’t tunnel; STRICT on a sidecar refuses it', () => {
    const objects = [
      ambientNs('client'),
      namespace('legacy'),
      pod('client', 'client', { ambient: true }),
      pod('legacy', 'app'),
      service('legacy', 'app'),
    ];
    const r = trace(objects, { from, url: 'http://app.legacy/' });
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'sidecar'],
    );
    assert.equal(r.hops[0]?.mtls, false);
    const strict = trace(
      [...objects, istio('PeerAuthentication', 'legacy', 'strict', { mtls: { mode: 'STRICT' } })],
      { from, url: 'http://app.legacy/' },
    );
    // ztunnel is an L4 proxy: the client sees the sidecar's reset, not an HTTP 503 (STRICT resets plaintext).
    assert.deepEqual(strict.response, { code: 0, flags: '-' });
    assert.deepEqual(
      strict.hops.map((h) => h.kind),
      ['ztunnel', 'sidecar'],
    );
    assert.equal(strict.hops[1]?.decision, 'deny');
  });

  test('a sidecar that accepts HBONE (networking.istio.io/tunnel: http) gets mTLS, so STRICT passes', () => {
    const objects = [
      ambientNs('client'),
      namespace('legacy'),
      pod('client', 'client', { ambient: true }),
      pod('legacy', 'app', { labels: { 'networking.istio.io/tunnel': 'http' } }),
      service('legacy', 'app'),
      istio('PeerAuthentication', 'legacy', 'strict', { mtls: { mode: 'STRICT' } }),
    ];
    const r = trace(objects, { from, url: 'http://app.legacy/' });
    assert.equal(r.hops[0]?.mtls, true);
    assert.equal(r.hops[0]?.tls, 'HBONE');
    assert.equal(r.response.code, 200);
  });
});

describe('waypoints', () => {
  const owner = policy('apps', 'owner', {
    targetRefs: [{ kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'waypoint' }],
    action: 'ALLOW',
    rules: [{ when: [{ key: 'request.headers[x-user]', values: ['alice'] }] }],
  });

  test('policies with targetRefs to the waypoint: the owner passes, another user gets 403 at the waypoint', () => {
    const allowed = trace(platform({ extra: [owner] }), { from, url, headers: { 'X-User': 'alice' } });
    assert.equal(allowed.response.code, 200);
    assert.equal(allowed.hops[1]?.policy, 'apps/owner');
    const denied = trace(platform({ extra: [owner] }), { from, url, headers: { 'X-User': 'mallory' } });
    assert.deepEqual(denied.response, { code: 403, flags: '-' });
    assert.equal(denied.hops.length, 2);
    assert.equal(labelsOf(denied, 'waypoint')['response_code'], '403');
  });

  test('policies targeting the Service, and the waypoint class from the root namespace, apply too', () => {
    const byService = policy('apps', 'svc', {
      targetRefs: [{ kind: 'Service', group: '', name: 'app' }],
      action: 'DENY',
      rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }],
    });
    assert.equal(trace(platform({ extra: [byService] }), { from, url, method: 'DELETE' }).response.code, 403);
    const byClass = policy('istio-system', 'nothing', {
      targetRefs: [{ kind: 'GatewayClass', group: 'gateway.networking.k8s.io', name: 'istio-waypoint' }],
    });
    assert.equal(trace(platform({ extra: [byClass] }), { from, url }).response.code, 403);
  });

  test('a request to the pod’s own address skips a waypoint for services; one for workloads (or all) takes it, with its own policies only', () => {
    const byService = policy('apps', 'svc', {
      targetRefs: [{ kind: 'Service', group: '', name: 'app' }],
      action: 'DENY',
      rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }],
    });
    const app = pod('apps', 'app', { ambient: true, ip: '10.1.0.9' });
    const toPod = (objects: KubeObject[], method = 'GET') =>
      trace(
        objects.map((o) => (o.kind === 'Pod' && o.metadata.name === 'app-0' ? app : o)),
        { from, url: 'http://10.1.0.9:8080/', method },
      );
    const direct = toPod(platform({ extra: [byService] }), 'DELETE');
    assert.deepEqual(
      direct.hops.map((h) => h.kind),
      ['ztunnel', 'ztunnel'],
    );
    assert.equal(
      direct.response.code,
      200,
      'the Service’s policy is on a waypoint that never sees the request',
    );
    const forAll = (extra: KubeObject[]) =>
      platform({ extra }).map((o) =>
        o.kind === 'Gateway' ? waypoint('apps', 'waypoint', { 'istio.io/waypoint-for': 'all' }) : o,
      );
    const via = toPod(forAll([byService]), 'DELETE');
    assert.deepEqual(
      via.hops.map((h) => h.kind),
      ['ztunnel', 'waypoint', 'ztunnel'],
    );
    assert.equal(
      via.response.code,
      200,
      'a Service-targeted policy does not apply to a request addressed to a pod',
    );
    const byGateway = policy('apps', 'gw', {
      targetRefs: [{ kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'waypoint' }],
      action: 'DENY',
      rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }],
    });
    const denied = toPod(forAll([byGateway]), 'DELETE');
    assert.equal(denied.response.code, 403);
    assert.equal(denied.hops[1]?.policy, 'apps/gw');
  });

  test('routing with a mesh HTTPRoute of the service’s namespace; the destination ztunnel sees the waypoint', () => {
    const route: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'split', namespace: 'apps' },
      spec: {
        parentRefs: [{ group: '', kind: 'Service', name: 'app', port: 80 }],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/v2' } }],
            backendRefs: [{ name: 'app2', port: 80 }],
          },
          { backendRefs: [{ name: 'app', port: 80 }] },
        ],
      },
    };
    const objects = platform({
      extra: [route, pod('apps', 'app2', { ambient: true }), service('apps', 'app2')],
    });
    const r = trace(objects, { from, url: 'http://app.apps/v2/x' });
    assert.equal(r.hops[1]?.virtualService, 'apps/split');
    assert.match(r.hops[2]?.tls ?? '', /HBONE from apps\/waypoint/);
    assert.match(r.hops[1]?.upstream ?? '', /apps\/app2/);
    // The waypoint reports the request for the client, towards the routed backend; it skips nothing.
    const report = labelsOf(r, 'waypoint');
    assert.equal(report['source_workload'], from.split('/')[1]);
    assert.equal(report['destination_service_name'], 'app2');
    assert.equal(report['connection_security_policy'], 'mutual_tls');
    assert.equal(r.telemetry.filter((t) => t.metric === 'istio_requests_total').length, 1);
    assert.deepEqual(
      r.hops[1]?.notes.filter((n) => n.includes('skips waypoint')),
      [],
    );
  });

  test('routing with a mesh VirtualService: of the service’s namespace it applies, of a third namespace it does not', () => {
    const vs = (ns: string) =>
      istio('VirtualService', ns, 'to-v2', {
        hosts: ['app.apps.svc.cluster.local'],
        http: [
          {
            match: [{ uri: { prefix: '/v2' } }],
            route: [{ destination: { host: 'app2.apps.svc.cluster.local', port: { number: 80 } } }],
          },
          { route: [{ destination: { host: 'app.apps.svc.cluster.local', port: { number: 80 } } }] },
        ],
      });
    const extra = [pod('apps', 'app2', { ambient: true }), service('apps', 'app2')];
    const own = trace(platform({ extra: [...extra, vs('apps')] }), { from, url: 'http://app.apps/v2/x' });
    assert.equal(own.hops[1]?.virtualService, 'apps/to-v2');
    assert.match(own.hops[1]?.upstream ?? '', /apps\/app2/);
    const other = trace(platform({ extra: [...extra, namespace('elsewhere'), vs('elsewhere')] }), {
      from,
      url: 'http://app.apps/v2/x',
    });
    assert.equal(other.hops[1]?.route, 'default');
    assert.match(other.hops[1]?.upstream ?? '', /apps\/app-0/);
  });

  test('reporter by version: waypoint from 1.22, destination before (S1)', () => {
    assert.equal(
      trace(platform(), { from, url }, '1.22').telemetry.some((t) => t.reporter === 'waypoint'),
      true,
    );
    const old = trace(platform(), { from, url }, '1.21').telemetry.find((t) => t.proxy === 'apps/waypoint');
    assert.equal(old?.reporter, 'destination');
  });

  test('destination labels from the endpoint from 1.22, the waypoint’s own at 1.21 (S3); service namespace (S2)', () => {
    assert.equal(
      labelsOf(trace(platform(), { from, url }, '1.22'), 'waypoint')['destination_workload'],
      'app-0',
    );
    const old = trace(platform(), { from, url }, '1.21').telemetry.find((t) => t.proxy === 'apps/waypoint');
    assert.equal(old?.labels['destination_workload'], 'waypoint');
  });
});

describe('ztunnel authorization', () => {
  const run = (policies: KubeObject[], useWaypoint = false) =>
    trace(platform({ useWaypoint, extra: policies }), { from, url });

  test('an L4 ALLOW on the client principal allows', () => {
    const r = run([
      policy('apps', 'l4', {
        action: 'ALLOW',
        rules: [{ from: [{ source: { principals: ['cluster.local/ns/client/sa/client'] } }] }],
      }),
    ]);
    assert.equal(r.response.code, 200);
  });

  test('an ALLOW with only L7 rules and no waypoint: ztunnel drops the rules and denies everything', () => {
    const r = run([
      policy('apps', 'l7', { action: 'ALLOW', rules: [{ to: [{ operation: { paths: ['/api/*'] } }] }] }),
    ]);
    assert.deepEqual(r.response, { code: 0, flags: 'DENY' });
    assert.match(r.hops[1]?.notes.join(' ') ?? '', /had only L7 rules, which ztunnel drops/);
    const record = r.telemetry.find(
      (t) => t.reporter === 'destination' && t.metric === 'istio_tcp_connections_closed_total',
    );
    assert.equal(record?.labels['response_flags'], 'DENY');
    assert.equal(
      r.telemetry.find(
        (t) => t.reporter === 'destination' && t.metric === 'istio_tcp_connections_opened_total',
      )?.labels['response_flags'],
      '-',
    );
  });

  test('DENY: an entry with only L7 fields never matches, even beside an L4 entry (S11); L4 fields in the same entry are enforced', () => {
    const mixed = run([
      policy('apps', 'deny', {
        action: 'DENY',
        rules: [
          {
            from: [{ source: { principals: ['cluster.local/ns/client/sa/client'] } }],
            to: [{ operation: { paths: ['/admin'] } }],
          },
        ],
      }),
    ]);
    assert.equal(mixed.response.code, 200);
    const sameEntry = run([
      policy('apps', 'deny', {
        action: 'DENY',
        rules: [{ to: [{ operation: { ports: ['8080'], paths: ['/admin'] } }] }],
      }),
    ]);
    assert.deepEqual(sameEntry.response, { code: 0, flags: 'DENY' });
  });

  test('policies with targetRefs are not sent to ztunnel', () => {
    const r = run([
      policy('apps', 'tr', { targetRefs: [{ kind: 'Service', name: 'app' }], action: 'DENY', rules: [{}] }),
    ]);
    assert.equal(r.response.code, 200);
  });

  test('with a waypoint on the path ztunnel sees the waypoint’s identity; a refusal gives the waypoint 503', () => {
    const onlyClient = policy('apps', 'l4', {
      action: 'ALLOW',
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/client/sa/client'] } }] }],
    });
    const r = run([onlyClient], true);
    assert.deepEqual(r.response, { code: 503, flags: 'UF' });
    const allowWaypoint = policy('apps', 'l4', {
      action: 'ALLOW',
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/apps/sa/waypoint'] } }] }],
    });
    assert.equal(run([allowWaypoint], true).response.code, 200);
  });

  test('STRICT PeerAuthentication refuses connections without identity', () => {
    const objects = [
      namespace('plain', {}),
      pod('plain', 'client', { sidecar: false }),
      ambientNs('apps'),
      pod('apps', 'app', { ambient: true }),
      service('apps', 'app'),
      istio('PeerAuthentication', 'apps', 'strict', { mtls: { mode: 'STRICT' } }),
    ];
    const r = trace(objects, { from: 'plain/client-0', url });
    assert.deepEqual(r.response, { code: 0, flags: 'DENY' });
    assert.match(r.hops[0]?.notes.join(' ') ?? '', /STRICT/);
  });
});

describe('interoperability', () => {
  test('a sidecar client sends HBONE straight to the ambient pod and skips the waypoint (said in the hop)', () => {
    const objects = [
      namespace('client'),
      pod('client', 'client'),
      ambientNs('apps', { 'istio.io/use-waypoint': 'waypoint' }),
      pod('apps', 'app', { ambient: true }),
      service('apps', 'app'),
      waypoint('apps'),
    ];
    const r = trace(objects, { from, url });
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['sidecar', 'ztunnel'],
    );
    assert.match(r.hops[0]?.notes.join(' ') ?? '', /skips waypoint apps\/waypoint/);
  });

  test('an ingress gateway goes to the waypoint only when the service opts in', () => {
    const ingress = [
      namespace('istio-system', {}),
      pod('istio-system', 'ingress', { sidecar: false, gateway: true, labels: { istio: 'ingressgateway' } }),
      istio('Gateway', 'istio-system', 'public', {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      }),
      istio('VirtualService', 'apps', 'site', {
        hosts: ['app.example.com'],
        gateways: ['istio-system/public'],
        http: [{ route: [{ destination: { host: 'app.apps.svc.cluster.local', port: { number: 80 } } }] }],
      }),
    ];
    const direct = trace([...platform(), ...ingress], { from: 'external', url: 'http://app.example.com/' });
    assert.deepEqual(
      direct.hops.map((h) => h.kind),
      ['gateway', 'ztunnel'],
    );
    const optIn = platform().map((o) =>
      o.kind === 'Namespace' && o.metadata.name === 'apps'
        ? ambientNs('apps', { 'istio.io/use-waypoint': 'waypoint', 'istio.io/ingress-use-waypoint': 'true' })
        : o,
    );
    assert.deepEqual(
      trace([...optIn, ...ingress], { from: 'external', url: 'http://app.example.com/' }).hops.map(
        (h) => h.kind,
      ),
      ['gateway', 'waypoint', 'ztunnel'],
    );
  });
});
