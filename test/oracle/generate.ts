/**
 * Platforms drawn at random for the differential tests (test/oracle/generated.test.ts, the oracle bench):
 * in each, a client with a sidecar calls two Services through a VirtualService whose rules match on paths
 * (prefix, exact, regex), headers and methods and split between the Services, and an AuthorizationPolicy
 * (ALLOW or DENY, on paths, methods and the caller's identity) may guard one of them. It may also call
 * out of the mesh through a ServiceEntry (resolution NONE, DNS or STATIC; with or without addresses; HTTP,
 * sniffed and TCP ports; exported everywhere or to its own namespace), perhaps under a Sidecar that
 * blocks unknown hosts (REGISTRY_ONLY) or imports only some hosts, perhaps routed by a VirtualService for
 * the external host: by name, by its address, and to a host no entry names. A Sidecar's ingress may list
 * the port `a` is called on, or only another (whose calls then pass through). A PeerAuthentication may
 * set the namespace's mTLS mode (and another for `a`'s port), and a client without a proxy may make the
 * first call. A DestinationRule may give `b` a subset (which the VirtualService may route to, defined or
 * not) and the TLS its clients use. An ambient pod may serve, guarded at its ztunnel by L4 policies (whose L7 parts ztunnel
 * cannot see) and perhaps STRICT mTLS, perhaps behind a waypoint with L7 policies attached to the Service or
 * the waypoint, called by the sidecar client, an ambient pod and the client without a proxy. Each platform
 * lives in a
 * namespace of its own (g0, g1, ...), so one oracle run answers all of them.
 */
import fc from 'fast-check';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';
import { deployment, istio, service, waypointGateway } from '../mesh-fixtures.ts';

const paths = ['/', '/v1', '/v1/predict', '/v12', '/api/x', '/apix', '/A/b', '/v1/models/m:predict'];
const regexes = ['/v[0-9]+', '/api/.*', '.*predict', '/v1|/api', '/[a-z]+'];
const headerValues = ['1', '10', 'beta', 'BETA'];
const methods = ['GET', 'POST'];

const stringMatch = fc.oneof(
  fc.constantFrom(...paths).map((v) => ({ prefix: v })),
  fc.constantFrom(...paths).map((v) => ({ exact: v })),
  fc.constantFrom(...regexes).map((v) => ({ regex: v })),
);
const headerMatch = fc.oneof(
  fc.constantFrom(...headerValues).map((v) => ({ exact: v })),
  fc.constantFrom(...headerValues).map((v) => ({ prefix: v.slice(0, 1) })),
  fc.constantFrom('[0-9]+', 'b.*').map((v) => ({ regex: v })),
);
const match = fc.record(
  {
    uri: stringMatch,
    headers: fc.record({ 'x-v': headerMatch }),
    method: fc.constantFrom(...methods).map((m) => ({ exact: m })),
  },
  { requiredKeys: [] },
);
const destinations: fc.Arbitrary<{ s: string; weight: number }[]> = fc.oneof(
  fc.constantFrom('a', 'b').map((s) => [{ s, weight: 100 }]),
  fc.integer({ min: 1, max: 99 }).map((w) => [
    { s: 'a', weight: w },
    { s: 'b', weight: 100 - w },
  ]),
);
const rule = fc.record({ match: fc.array(match, { maxLength: 2 }), route: destinations });
const policy = fc.option(
  fc.record({
    action: fc.constantFrom('ALLOW', 'DENY'),
    paths: fc.option(
      fc.array(fc.constantFrom('/v1', '/v1/*', '*predict', '/api/*', '/'), { minLength: 1, maxLength: 2 }),
    ),
    methods: fc.option(fc.array(fc.constantFrom(...methods), { minLength: 1, maxLength: 1 })),
    fromClient: fc.option(fc.boolean()),
  }),
);
const request = fc.record({
  path: fc.constantFrom(...paths),
  method: fc.constantFrom(...methods),
  header: fc.option(fc.constantFrom(...headerValues)),
  to: fc.constantFrom('a', 'b'),
});
/** Ports an entry may declare: HTTP, sniffed (no protocol), TCP. */
const entryPorts = [
  { number: 80, name: 'http', protocol: 'HTTP' },
  { number: 8000, name: 'auto' },
  { number: 5432, name: 'pg', protocol: 'TCP' },
  { number: 9090, name: 'http-alt', protocol: 'HTTP' },
];
const egress = fc.option(
  fc.record({
    resolution: fc.constantFrom('NONE', 'DNS', 'STATIC'),
    withAddress: fc.boolean(),
    ports: fc.subarray(entryPorts, { minLength: 1 }),
    exportTo: fc.constantFrom('default', '.', '*'),
    internal: fc.boolean(),
    /** A Sidecar for the client: its outbound policy, and whether its egress imports only its own namespace. */
    sidecar: fc.option(fc.record({ registryOnly: fc.boolean(), ownNamespaceOnly: fc.boolean() })),
    /** A VirtualService for the external host: to a local Service, or to the host on another port. */
    route: fc.option(fc.constantFrom('to-service', 'to-port')),
    calls: fc.array(
      fc.record({
        target: fc.constantFrom('host', 'address', 'unknown'),
        port: fc.constantFrom(80, 8000, 5432, 9090),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  }),
);
/** Who an L4 rule admits or names: a principal, a namespace, an address block (pod addresses are 10.x). */
const l4Source = fc.constantFrom(
  'client',
  'ambient-client',
  'other',
  'any-principal',
  'namespace',
  'other-namespace',
  'not-client',
  'cidr-pods',
  'cidr-elsewhere',
);
const l4Policy = fc.record({
  action: fc.constantFrom('ALLOW', 'DENY'),
  /** The ambient server alone, or every workload of the namespace. */
  scope: fc.constantFrom('server', 'server', 'namespace'),
  /** No rules at all, or rules: each perhaps naming a source, a port, and an HTTP path (L7, which ztunnel cannot see). */
  rules: fc.option(
    fc.array(
      fc.record({
        from: fc.option(l4Source),
        port: fc.option(fc.constantFrom('8080', '9999')),
        path: fc.boolean(),
      }),
      { maxLength: 2 },
    ),
  ),
});
/**
 * An ambient pod `ambient-server` (enrolled by its own label) behind a Service of that name, guarded by L4
 * policies and perhaps a PeerAuthentication of its own, called by the sidecar client, by an ambient pod
 * `ambient-client`, and by the client without a proxy when there is one. (Single letters would not do: YAML
 * 1.1, which Kubernetes reads, takes `y` for true.)
 */
/** An L7 policy a waypoint enforces: attached to the server's Service or to the waypoint itself. */
const l7Policy = fc.record({
  action: fc.constantFrom('ALLOW', 'DENY'),
  target: fc.constantFrom('Service', 'Gateway'),
  from: fc.option(fc.constantFrom('client', 'ambient-client', 'other')),
  paths: fc.option(fc.constantFrom(['/v1/*'], ['/other'], ['*x'])),
  methods: fc.option(fc.constantFrom(['GET'], ['POST'])),
});
const ambient = fc.option(
  fc.record({
    policies: fc.array(l4Policy, { maxLength: 3 }),
    peer: fc.option(fc.constantFrom('STRICT', 'PERMISSIVE')),
    /** A waypoint the server's Service uses (by its label), with L7 policies. */
    waypoint: fc.option(fc.record({ policies: fc.array(l7Policy, { maxLength: 2 }) })),
  }),
);
const platformSpec = fc.record({
  rules: fc.array(rule, { minLength: 1, maxLength: 3 }),
  policy,
  requests: fc.array(request, { minLength: 3, maxLength: 5 }),
  egress,
  /** A Sidecar for `a` whose ingress lists one port: the one its Service sends to (8080), or another. */
  ingress: fc.option(fc.constantFrom(8080, 9999)),
  /** A PeerAuthentication for the namespace (perhaps with a port of `a` set apart), and a client without a proxy. */
  peer: fc.option(
    fc.record({
      mode: fc.constantFrom('STRICT', 'PERMISSIVE', 'DISABLE'),
      port: fc.option(fc.constantFrom('STRICT', 'PERMISSIVE', 'DISABLE')),
    }),
  ),
  legacy: fc.boolean(),
  /**
   * A Gateway API gateway with an HTTPRoute for `app.<ns>.example.com` to `a`, to `b`, or to the previous
   * platform's `a` (with a ReferenceGrant or without one); called from outside on a routed path, another
   * path, and a host the route does not name.
   */
  web: fc.option(fc.record({ backend: fc.constantFrom('a', 'b', 'previous'), grant: fc.boolean() })),
  /**
   * A DestinationRule for `b` (its pods are `version: v1`): with or without a subset v1, and perhaps the TLS
   * clients use (DISABLE or ISTIO_MUTUAL); the VirtualService may route to `b`'s subset v1 (which does not
   * exist without the rule's subset).
   */
  destination: fc.record({
    rule: fc.option(
      fc.record({ subset: fc.boolean(), tls: fc.option(fc.constantFrom('DISABLE', 'ISTIO_MUTUAL')) }),
    ),
    subsetRoute: fc.boolean(),
  }),
  ambient,
});
/** What an arbitrary draws. */
type Drawn<A> = A extends fc.Arbitrary<infer T> ? T : never;
type Spec = Drawn<typeof platformSpec>;

/** One platform's objects, in namespace `ns`. */
function objectsOf(ns: string, index: number, spec: Spec): KubeObject[] {
  const host = (s: string) => `${s}.${ns}.svc.cluster.local`;
  const out: KubeObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { 'istio-injection': 'enabled' } } },
    deployment(ns, 'client'),
    deployment(ns, 'a'),
    deployment(ns, 'b', { version: 'v1' }),
    service(ns, 'a', { ip: `10.100.${Math.floor(index / 100)}.${(index % 100) * 2 + 1}` }),
    service(ns, 'b', { ip: `10.100.${Math.floor(index / 100)}.${(index % 100) * 2 + 2}` }),
    istio('VirtualService', ns, 'routes', {
      hosts: [host('a')],
      http: spec.rules.map((r, i) => ({
        name: `r${i}`,
        ...(r.match.length > 0 ? { match: r.match } : {}),
        route: r.route.map((d) => ({
          destination: {
            host: host(d.s),
            ...(d.s === 'b' && spec.destination.subsetRoute ? { subset: 'v1' } : {}),
          },
          weight: d.weight,
        })),
      })),
    }),
  ];
  out.push(
    ...egressObjects(ns, index, spec),
    ...webObjects(ns, index, spec),
    ...ambientObjects(ns, index, spec),
  );
  if (spec.legacy) out.push(deployment(ns, 'legacy', { 'sidecar.istio.io/inject': 'false' }));
  const rule = spec.destination.rule;
  if (rule)
    out.push(
      istio('DestinationRule', ns, 'b', {
        host: 'b',
        ...(rule.tls !== null ? { trafficPolicy: { tls: { mode: rule.tls } } } : {}),
        ...(rule.subset ? { subsets: [{ name: 'v1', labels: { version: 'v1' } }] } : {}),
      }),
    );
  const peer = spec.peer;
  if (peer) {
    out.push(istio('PeerAuthentication', ns, 'default', { mtls: { mode: peer.mode } }));
    if (peer.port !== null)
      out.push(
        istio('PeerAuthentication', ns, 'a', {
          selector: { matchLabels: { app: 'a' } },
          mtls: { mode: peer.mode },
          portLevelMtls: { '8080': { mode: peer.port } },
        }),
      );
  }
  if (spec.ingress !== null) {
    const port = { number: spec.ingress, protocol: 'HTTP', name: 'http' };
    const ingress = [{ port, defaultEndpoint: `127.0.0.1:${spec.ingress}` }];
    out.push(istio('Sidecar', ns, 'a', { workloadSelector: { labels: { app: 'a' } }, ingress }));
  }
  const p = spec.policy;
  if (p) {
    const to = {
      ...(p.paths ? { paths: p.paths } : {}),
      ...(p.methods ? { methods: p.methods } : {}),
    };
    const from =
      p.fromClient === null
        ? undefined
        : [{ source: { principals: [`cluster.local/ns/${ns}/sa/${p.fromClient ? 'client' : 'other'}`] } }];
    out.push(
      istio('AuthorizationPolicy', ns, 'guard', {
        selector: { matchLabels: { app: 'a' } },
        action: p.action,
        rules: [
          { ...(Object.keys(to).length > 0 ? { to: [{ operation: to }] } : {}), ...(from ? { from } : {}) },
        ],
      }),
    );
  }
  return out;
}

/** A platform's ambient pods, the server's Service, and the policies that guard it. */
function ambientObjects(ns: string, index: number, spec: Spec): KubeObject[] {
  const amb = spec.ambient;
  if (!amb) return [];
  const enrolled = { 'istio.io/dataplane-mode': 'ambient', 'sidecar.istio.io/inject': 'false' };
  const out: KubeObject[] = [
    deployment(ns, 'ambient-client', enrolled),
    deployment(ns, 'ambient-server', enrolled),
    service(ns, 'ambient-server', {
      ip: `10.101.${Math.floor(index / 200)}.${(index % 200) + 1}`,
      ...(amb.waypoint ? { labels: { 'istio.io/use-waypoint': 'waypoint' } } : {}),
    }),
  ];
  const principal = (sa: string) => `cluster.local/ns/${ns}/sa/${sa}`;
  const source = (from: string): Record<string, string[]> => {
    switch (from) {
      case 'client':
      case 'ambient-client':
      case 'other':
        return { principals: [principal(from)] };
      case 'any-principal':
        return { principals: ['*'] };
      case 'namespace':
        return { namespaces: [ns] };
      case 'other-namespace':
        return { namespaces: ['elsewhere'] };
      case 'not-client':
        return { notPrincipals: [principal('client')] };
      case 'cidr-pods':
        return { ipBlocks: ['10.0.0.0/8'] };
      default:
        return { ipBlocks: ['192.0.2.0/24'] };
    }
  };
  amb.policies.forEach((p, i) => {
    // A DENY policy needs a rule (Istio refuses one without): with none drawn it gets `{}`, which denies all.
    const drawn =
      p.action === 'DENY' && !p.rules?.length ? [{ from: null, port: null, path: false }] : p.rules;
    const rules = drawn?.map((r) => {
      const operation = {
        ...(r.port !== null ? { ports: [r.port] } : {}),
        ...(r.path ? { paths: ['/v1/*'] } : {}),
      };
      return {
        ...(r.from !== null ? { from: [{ source: source(r.from) }] } : {}),
        ...(Object.keys(operation).length > 0 ? { to: [{ operation }] } : {}),
      };
    });
    out.push(
      istio('AuthorizationPolicy', ns, `l4-${i}`, {
        ...(p.scope === 'server' ? { selector: { matchLabels: { app: 'ambient-server' } } } : {}),
        action: p.action,
        ...(rules !== undefined ? { rules } : {}),
      }),
    );
  });
  if (amb.waypoint) out.push(...waypointObjects(ns, amb.waypoint.policies));
  if (amb.peer !== null)
    out.push(
      istio('PeerAuthentication', ns, 'ambient-server', {
        selector: { matchLabels: { app: 'ambient-server' } },
        mtls: { mode: amb.peer },
      }),
    );
  return out;
}

/** A namespace's waypoint and the L7 policies attached to it or to the ambient server's Service. */
function waypointObjects(ns: string, policies: readonly Drawn<typeof l7Policy>[]): KubeObject[] {
  const out: KubeObject[] = [waypointGateway(ns)];
  policies.forEach((p, i) => {
    const operation = {
      ...(p.paths ? { paths: p.paths } : {}),
      ...(p.methods ? { methods: p.methods } : {}),
    };
    const rule = {
      ...(p.from ? { from: [{ source: { principals: [`cluster.local/ns/${ns}/sa/${p.from}`] } }] } : {}),
      ...(Object.keys(operation).length > 0 ? { to: [{ operation }] } : {}),
    };
    out.push(
      istio('AuthorizationPolicy', ns, `l7-${i}`, {
        targetRefs: [
          p.target === 'Service'
            ? { kind: 'Service', group: '', name: 'ambient-server' }
            : { kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'waypoint' },
        ],
        action: p.action,
        rules: [rule],
      }),
    );
  });
  return out;
}

/** The Gateway API gateway of a platform, its HTTPRoute, and the grant its backend may need. */
function webObjects(ns: string, index: number, spec: Spec): KubeObject[] {
  const web = spec.web;
  if (!web) return [];
  const previous = web.backend === 'previous' && index > 0 ? `g${index - 1}` : undefined;
  const api = 'gateway.networking.k8s.io/v1';
  const out: KubeObject[] = [
    {
      apiVersion: api,
      kind: 'Gateway',
      metadata: { name: 'web', namespace: ns },
      spec: {
        gatewayClassName: 'istio',
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: `*.${ns}.example.com` }],
      },
      status: {
        addresses: [{ type: 'IPAddress', value: `10.200.${Math.floor(index / 200)}.${(index % 200) + 1}` }],
      },
    },
    {
      apiVersion: api,
      kind: 'HTTPRoute',
      metadata: { name: 'web', namespace: ns },
      spec: {
        parentRefs: [{ name: 'web' }],
        hostnames: [`app.${ns}.example.com`],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
            backendRefs: [
              previous
                ? { name: 'a', namespace: previous, port: 80 }
                : { name: web.backend === 'b' ? 'b' : 'a', port: 80 },
            ],
          },
        ],
      },
    },
  ];
  if (previous && web.grant)
    out.push({
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: `from-${ns}`, namespace: previous },
      spec: {
        from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: ns }],
        to: [{ group: '', kind: 'Service' }],
      },
    });
  return out;
}

/** A platform's external host, and the address its entry may list. */
function externalHost(ns: string, index: number): { host: string; address: string } {
  return { host: `api.${ns}.example.com`, address: `240.0.${Math.floor(index / 200)}.${(index % 200) + 1}` };
}

/** A creation time for the `index`th platform's objects, a second after the one before. */
function createdAt(index: number): string {
  return new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString().replace('.000Z', 'Z');
}

/** The ServiceEntry, Sidecar and VirtualService of a platform's egress, if it has one. */
function egressObjects(ns: string, index: number, spec: Spec): KubeObject[] {
  const e = spec.egress;
  if (!e) return [];
  const { host, address } = externalHost(ns, index);
  // Entries are created one second apart in platform order: which is older decides between entries that
  // claim the same listener, and a cluster stamps objects as they are created.
  const out: KubeObject[] = [
    istio(
      'ServiceEntry',
      ns,
      'external',
      {
        hosts: [host],
        ...(e.withAddress ? { addresses: [address] } : {}),
        ports: e.ports,
        resolution: e.resolution,
        location: e.internal ? 'MESH_INTERNAL' : 'MESH_EXTERNAL',
        ...(e.resolution === 'STATIC' ? { endpoints: [{ address: `198.51.100.${(index % 250) + 1}` }] } : {}),
        ...(e.exportTo !== 'default' ? { exportTo: [e.exportTo] } : {}),
      },
      createdAt(index),
    ),
  ];
  if (e.sidecar)
    out.push(
      istio('Sidecar', ns, 'client', {
        workloadSelector: { labels: { app: 'client' } },
        egress: [{ hosts: e.sidecar.ownNamespaceOnly ? ['./*'] : ['*/*'] }],
        ...(e.sidecar.registryOnly ? { outboundTrafficPolicy: { mode: 'REGISTRY_ONLY' } } : {}),
      }),
    );
  if (e.route) {
    const destination =
      e.route === 'to-service'
        ? { host: `a.${ns}.svc.cluster.local` }
        : { host, port: { number: e.ports[0]?.number ?? 80 } };
    out.push(
      istio(
        'VirtualService',
        ns,
        'external',
        { hosts: [host], http: [{ match: [{ uri: { prefix: '/v1' } }], route: [{ destination }] }] },
        createdAt(index),
      ),
    );
  }
  return out;
}

/** `count` platforms drawn with `seed`, as one set of objects, and their requests, labelled `generated/...`. */
export function generatedPlatforms(
  seed: number,
  count: number,
): { objects: KubeObject[]; requests: { label: string; input: TraceInput }[] } {
  const specs = fc.sample(platformSpec, { seed, numRuns: count });
  const objects: KubeObject[] = [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'istio' },
      spec: { controllerName: 'istio.io/gateway-controller' },
    },
  ];
  const requests: { label: string; input: TraceInput }[] = [];
  specs.forEach((spec, i) => {
    const ns = `g${i}`;
    objects.push(...objectsOf(ns, i, spec));
    for (const [n, r] of spec.requests.entries()) {
      const input: TraceInput = {
        // With a client without a proxy, its first request is that client's.
        from: spec.legacy && n === 0 ? `${ns}/legacy` : `${ns}/client`,
        url: `http://${r.to}.${ns}.svc.cluster.local${r.path}`,
        method: r.method,
        ...(r.header !== null ? { headers: { 'x-v': r.header } } : {}),
      };
      requests.push({
        label: `generated/${ns} ${input.from === `${ns}/legacy` ? 'legacy ' : ''}${r.method} ${input.url}${r.header !== null ? ` x-v: ${r.header}` : ''}`,
        input,
      });
    }
    if (spec.web)
      for (const url of [
        `http://app.${ns}.example.com/v1/x`,
        `http://app.${ns}.example.com/other`,
        `http://nope.${ns}.example.com/v1/x`,
      ])
        requests.push({
          label: `generated/${ns} external GET ${url}`,
          input: { from: 'external', via: `${ns}/web`, url },
        });
    if (spec.ambient)
      for (const from of ['client', 'ambient-client', ...(spec.legacy ? ['legacy'] : [])])
        for (const [method, path] of [
          ['GET', '/v1/x'],
          ['POST', '/other'],
        ] as const) {
          const url = `http://ambient-server.${ns}.svc.cluster.local${path}`;
          requests.push({
            label: `generated/${ns} ${from} ${method} ${url}`,
            input: { from: `${ns}/${from}`, url, method },
          });
        }
    const { host, address } = externalHost(ns, i);
    for (const call of spec.egress?.calls ?? []) {
      const name = call.target === 'unknown' ? `elsewhere.${ns}.example.org` : host;
      const url =
        call.target === 'address'
          ? `http://${address}:${call.port}/v1/x`
          : `http://${name}:${call.port}/v1/x`;
      const input: TraceInput = {
        from: `${ns}/client`,
        url,
        ...(call.target === 'address' ? { headers: { host: `${host}:${call.port}` } } : {}),
      };
      requests.push({
        label: `generated/${ns} GET ${url}${call.target === 'address' ? ` (Host ${host})` : ''}`,
        input,
      });
    }
  });
  return { objects, requests };
}
