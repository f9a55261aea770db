/** The conversion rules of `kfmesh migrate --to ambient`, one small configuration each. */
import type { JsonRecord } from '../../src/model/object.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient, type MigrationResult } from '../../src/ambient/migrate.ts';
import { ztunnelPart } from '../../src/ambient/policies.ts';
import { l7AttributesOf } from '../../src/mesh/ambient.ts';
import { gatewayDuration } from '../../src/ambient/http-routes.ts';
import { reportToJson, reportToMarkdown } from '../../src/ambient/migration-report.ts';

const ns = (name: string, labels: Record<string, string> = { 'istio-injection': 'enabled' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

const deployment = (
  namespace: string,
  name: string,
  labels: Record<string, string>,
  sa = name,
  podLabels: Record<string, string> = {},
): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace },
  spec: {
    selector: { matchLabels: labels },
    template: {
      metadata: { labels: { ...labels, ...podLabels } },
      spec: { serviceAccountName: sa, containers: [{ name }] },
    },
  },
});

const service = (
  namespace: string,
  name: string,
  selector: Record<string, string>,
  port = 80,
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { selector, ports: [{ name: 'http', port, targetPort: 8080 }] },
});

const policy = (namespace: string, name: string, spec: JsonRecord): KubeObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name, namespace },
  spec,
});

const gatewayLabels = { app: 'istio-ingressgateway', istio: 'ingressgateway' };
const oldGatewayPrincipal = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';

/** Istio's ingress gateway pods and an Istio Gateway in `apps` that selects them. */
const ingress: KubeObject[] = [
  ns('istio-system', {}),
  deployment('istio-system', 'istio-ingressgateway', gatewayLabels, 'istio-ingressgateway-service-account', {
    'sidecar.istio.io/inject': 'false',
  }),
  {
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'apps' },
    spec: {
      selector: { istio: 'ingressgateway' },
      servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
    },
  },
];

const app = (name: string, labels = { app: name }): KubeObject[] => [
  deployment('apps', name, labels),
  service('apps', name, labels),
];

function migrate(objects: readonly KubeObject[]): MigrationResult {
  return migrateToAmbient(Snapshot.of(objects, 'test.yaml'));
}

function find(
  result: MigrationResult,
  kind: string,
  namespace: string,
  name: string,
  group?: string,
): KubeObject {
  const found = result.objects.find(
    (o) =>
      o.kind === kind &&
      (o.metadata.namespace ?? '') === namespace &&
      o.metadata.name === name &&
      (group === undefined || o.apiVersion.startsWith(group)),
  );
  assert.ok(found, `${kind} ${namespace}/${name} in the output`);
  return found;
}

function has(result: MigrationResult, kind: string, namespace: string, name: string): boolean {
  return result.objects.some(
    (o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name,
  );
}

function notesOf(result: MigrationResult, kind: string, name: string): string[] {
  return result.report.entries
    .filter((e) => e.object.kind === kind && e.object.name === name)
    .flatMap((e) => e.notes.map((n) => `${n.kind} ${n.field ?? ''}: ${n.message}`));
}

const spec = (o: KubeObject) => o['spec'] as JsonRecord;

describe('migrate: ingress', () => {
  const vs = (http: JsonRecord[], extra: JsonRecord = {}): KubeObject => ({
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'VirtualService',
    metadata: { name: 'ui', namespace: 'apps' },
    spec: { gateways: ['web'], hosts: ['*'], http, ...extra },
  });
  const base = [...ingress, ns('apps'), ...app('ui'), ...app('api')];

  test('an Istio Gateway becomes a Gateway API Gateway of class istio; its route an HTTPRoute', () => {
    const result = migrate([
      ...base,
      vs([
        {
          match: [{ uri: { prefix: '/ui/' } }],
          rewrite: { uri: '/' },
          headers: { request: { add: { 'x-forwarded-prefix': '/ui' } } },
          route: [{ destination: { host: 'ui.apps.svc.cluster.local', port: { number: 80 } } }],
          timeout: '300s',
        },
      ]),
    ]);
    const gateway = find(result, 'Gateway', 'apps', 'web', 'gateway.networking.k8s.io');
    assert.deepEqual(spec(gateway), {
      gatewayClassName: 'istio',
      listeners: [
        { name: 'http-80', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
      ],
    });
    assert.ok(
      !result.objects.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('networking.istio.io')),
    );
    const route = find(result, 'HTTPRoute', 'apps', 'ui');
    assert.deepEqual(spec(route), {
      parentRefs: [{ name: 'web' }],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/ui/' } }],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: { add: [{ name: 'x-forwarded-prefix', value: '/ui' }] },
            },
            {
              type: 'URLRewrite',
              urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } },
            },
          ],
          timeouts: { request: '300s' },
          backendRefs: [{ name: 'ui', port: 80 }],
        },
      ],
    });
    assert.ok(notesOf(result, 'VirtualService', 'ui').some((n) => n.includes('now also matches "/ui"')));
  });

  test('exact and regex matches rewrite the full path; hosts become hostnames; weights carry over', () => {
    const result = migrate([
      ...base,
      vs(
        [
          {
            match: [{ uri: { exact: '/old' } }, { uri: { regex: '/v[0-9]+/.*' }, method: { exact: 'post' } }],
            rewrite: { uri: '/new', authority: 'ui.internal' },
            route: [
              { destination: { host: 'ui', port: { number: 80 } }, weight: 90 },
              { destination: { host: 'api', port: { number: 80 } }, weight: 10 },
            ],
          },
        ],
        { hosts: ['ui.example.com'] },
      ),
    ]);
    const route = spec(find(result, 'HTTPRoute', 'apps', 'ui'));
    assert.deepEqual(route['hostnames'], ['ui.example.com']);
    const rules = route['rules'] as JsonRecord[];
    assert.equal(rules.length, 2);
    assert.deepEqual(rules[0]?.['matches'], [{ path: { type: 'Exact', value: '/old' } }]);
    assert.deepEqual(rules[1]?.['matches'], [
      { path: { type: 'RegularExpression', value: '/v[0-9]+/.*' }, method: 'POST' },
    ]);
    for (const rule of rules) {
      assert.deepEqual(rule['filters'], [
        {
          type: 'URLRewrite',
          urlRewrite: { hostname: 'ui.internal', path: { type: 'ReplaceFullPath', replaceFullPath: '/new' } },
        },
      ]);
      assert.deepEqual(rule['backendRefs'], [
        { name: 'ui', port: 80, weight: 90 },
        { name: 'api', port: 80, weight: 10 },
      ]);
    }
  });

  test('what Gateway API cannot say is dropped and reported, never widened', () => {
    const result = migrate([
      ...base,
      vs([
        {
          match: [{ authority: { regex: 'ui\\..*' }, uri: { prefix: '/a' } }, { uri: { prefix: '/b' } }],
          retries: { attempts: 3 },
          fault: { abort: { httpStatus: 500, percentage: { value: 1 } } },
          corsPolicy: { allowOrigins: [{ exact: 'https://x' }] },
          route: [{ destination: { host: 'ui', subset: 'v2', port: { number: 80 } } }],
        },
        { match: [{ sourceLabels: { app: 'x' } }], route: [{ destination: { host: 'api' } }] },
      ]),
    ]);
    const rules = spec(find(result, 'HTTPRoute', 'apps', 'ui'))['rules'] as JsonRecord[];
    // The authority match entry is left out (not loosened), the route without an expressible match too.
    assert.equal(rules.length, 1);
    assert.deepEqual(rules[0]?.['matches'], [{ path: { type: 'PathPrefix', value: '/b' } }]);
    const notes = notesOf(result, 'VirtualService', 'ui');
    for (const expected of [
      /^dropped spec\.http\[0\]\.match\[0\]\.authority: .*left out/,
      /^dropped spec\.http\[0\]\.retries:/,
      /^dropped spec\.http\[0\]\.fault:/,
      /^dropped spec\.http\[0\]\.corsPolicy:/,
      /^action spec\.http\[0\]\.route\[0\]\.destination\.subset:/,
      /^dropped spec\.http\[1\]: none of its matches/,
    ])
      assert.ok(
        notes.some((n) => expected.test(n)),
        `${expected} in ${notes.join('\n')}`,
      );
  });

  test('an Istio Gateway nothing binds is left out', () => {
    const result = migrate([...ingress, ns('apps'), ...app('ui')]);
    assert.ok(!result.objects.some((o) => o.kind === 'Gateway'));
    assert.equal(result.report.entries.find((e) => e.object.kind === 'Gateway')?.outcome, 'removed');
  });

  test('gateway policies move onto the Gateway with targetRefs; the old identity becomes <gateway>-istio', () => {
    const result = migrate([
      ...base,
      vs([{ route: [{ destination: { host: 'ui' } }] }]),
      policy('istio-system', 'require-jwt', {
        action: 'DENY',
        selector: { matchLabels: { app: 'istio-ingressgateway' } },
        rules: [{ from: [{ source: { notRequestPrincipals: ['*'] } }] }],
      }),
      policy('apps', 'ui', {
        selector: { matchLabels: { app: 'ui' } },
        rules: [{ from: [{ source: { principals: [oldGatewayPrincipal] } }] }],
      }),
    ]);
    assert.ok(!has(result, 'AuthorizationPolicy', 'istio-system', 'require-jwt'));
    const moved = spec(find(result, 'AuthorizationPolicy', 'apps', 'require-jwt'));
    assert.deepEqual(moved['targetRefs'], [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'web' },
    ]);
    assert.equal(moved['selector'], undefined);
    assert.equal(moved['action'], 'DENY');
    assert.deepEqual(spec(find(result, 'AuthorizationPolicy', 'apps', 'ui'))['rules'], [
      { from: [{ source: { principals: ['cluster.local/ns/apps/sa/web-istio'] } }] },
    ]);
  });
});

/** A VirtualService `apps/ui` on gateway `web`, routing everything to `ui`. */
const routed: KubeObject = {
  ...object('networking.istio.io/v1beta1', 'VirtualService', 'apps', 'ui'),
  spec: { gateways: ['web'], hosts: ['*'], http: [{ route: [{ destination: { host: 'ui' } }] }] },
};

function object(apiVersion: string, kind: string, namespace: string, name: string): KubeObject {
  return { apiVersion, kind, metadata: { name, namespace } };
}

describe('migrate: one front door', () => {
  /** A namespace that stays in sidecar mode, with a route on gateway `web` for these hosts. */
  const sidecarTeam = (hosts: string[]): KubeObject[] => [
    ns('team', { 'istio-injection': 'enabled', 'kfmesh.io/mode': 'sidecar' }),
    deployment('team', 'nb', { app: 'nb' }),
    service('team', 'nb', { app: 'nb' }),
    {
      ...object('networking.istio.io/v1beta1', 'VirtualService', 'team', 'nb'),
      spec: {
        gateways: ['apps/web'],
        hosts,
        http: [
          {
            match: [{ uri: { prefix: '/nb/' } }],
            route: [{ destination: { host: 'nb.team.svc.cluster.local' } }],
          },
        ],
      },
    },
  ];
  const base = [...ingress, ns('apps'), ...app('ui'), routed];

  test("a host a sidecar namespace's route uses stays on the old gateway, with every route it covers", () => {
    const result = migrate([...base, ...sidecarTeam(['*'])]);
    // Not converted: "*" is used by the namespace that stays, so the moved namespace's "*" route stays too.
    assert.ok(!result.objects.some((o) => o.kind === 'HTTPRoute'));
    assert.ok(!result.objects.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('gateway.')));
    assert.deepEqual(find(result, 'VirtualService', 'apps', 'ui'), routed);
    assert.ok(
      notesOf(result, 'Gateway', 'web').some(
        (n) =>
          n.startsWith('action') && /one front door for "\*": routes of team \(in sidecar mode\)/.test(n),
      ),
    );
    assert.ok(
      notesOf(result, 'VirtualService', 'ui').some((n) => /stays on apps\/web, the one front door/.test(n)),
    );
  });

  test('a wildcard route beside a named host that stays moves to the Gateway API gateway', () => {
    const result = migrate([...base, ...sidecarTeam(['nb.example.com'])]);
    assert.ok(find(result, 'HTTPRoute', 'apps', 'ui'));
    assert.ok(find(result, 'Gateway', 'apps', 'web', 'gateway.networking.k8s.io'));
    // The old gateway stays for the named host, whose own virtual host takes its requests there.
    assert.ok(find(result, 'Gateway', 'apps', 'web', 'networking.istio.io'));
    assert.equal(find(result, 'VirtualService', 'team', 'nb').metadata.name, 'nb');
    assert.ok(
      notesOf(result, 'Gateway', 'web').some((n) =>
        /point DNS .* for the hosts of the converted routes \(not "nb\.example\.com", which stay on the old gateway until team moves\)/.test(
          n,
        ),
      ),
    );
  });
});

describe('migrate: sidecar clients of L7 policies', () => {
  const profile: KubeObject[] = [
    {
      ...ns('user', {
        'istio-injection': 'enabled',
        'app.kubernetes.io/part-of': 'kubeflow-profile',
        'kfmesh.io/mode': 'sidecar',
      }),
      metadata: {
        name: 'user',
        labels: {
          'istio-injection': 'enabled',
          'app.kubernetes.io/part-of': 'kubeflow-profile',
          'kfmesh.io/mode': 'sidecar',
        },
        annotations: { owner: 'user@example.com' },
      },
    },
    deployment('user', 'client', { app: 'client' }, 'default-editor'),
  ];
  const pipelines: KubeObject[] = [
    ns('kubeflow'),
    deployment('kubeflow', 'ml-pipeline', { app: 'ml-pipeline' }),
    service('kubeflow', 'ml-pipeline', { app: 'ml-pipeline' }, 8888),
    policy('kubeflow', 'ml-pipeline', {
      selector: { matchLabels: { app: 'ml-pipeline' } },
      rules: [
        { from: [{ source: { principals: ['cluster.local/ns/kubeflow/sa/ml-pipeline'] } }] },
        { when: [{ key: 'request.headers[kubeflow-userid]', notValues: ['*'] }] },
      ],
    }),
  ];

  test("the pipelines API keeps its sidecar while a sidecar Profile's notebook calls it; its policy stays whole", () => {
    const result = migrate([...profile, ...pipelines]);
    const template = (
      find(result, 'Deployment', 'kubeflow', 'ml-pipeline')['spec'] as {
        template: { metadata: { labels: Record<string, string> } };
      }
    ).template;
    assert.equal(template.metadata.labels['sidecar.istio.io/inject'], 'true');
    assert.deepEqual(find(result, 'AuthorizationPolicy', 'kubeflow', 'ml-pipeline'), pipelines[3]);
    assert.ok(!result.objects.some((o) => o.kind === 'Gateway'), 'no waypoint');
    assert.ok(
      notesOf(result, 'Deployment', 'ml-pipeline').some((n) =>
        /keeps its sidecar in the ambient namespace, as it serves a flow of the platform from user/.test(n),
      ),
    );
  });

  test('without a sidecar client it goes ambient behind a waypoint', () => {
    const result = migrate(pipelines);
    const template = (
      find(result, 'Deployment', 'kubeflow', 'ml-pipeline')['spec'] as {
        template: { metadata: { labels: Record<string, string> } };
      }
    ).template;
    assert.equal(template.metadata.labels['sidecar.istio.io/inject'], undefined);
    assert.ok(find(result, 'Gateway', 'kubeflow', 'waypoint'));
  });
});

describe("migrate: the controllers' configuration", () => {
  const configMap = (namespace: string, name: string, data: Record<string, string>): KubeObject => ({
    ...object('v1', 'ConfigMap', namespace, name),
    data,
  });
  const profiles = configMap('kubeflow', 'profiles-config-abc', {
    ISTIO_INGRESS_GATEWAY_PRINCIPAL: oldGatewayPrincipal,
  });
  const base = [...ingress, ns('apps'), ...app('ui'), routed, profiles];
  const istioGateway = (result: MigrationResult) =>
    result.objects.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('networking.istio.io'));
  const principal = (result: MigrationResult) =>
    (find(result, 'ConfigMap', 'kubeflow', 'profiles-config-abc')['data'] as Record<string, string>)[
      'ISTIO_INGRESS_GATEWAY_PRINCIPAL'
    ];

  test('no controller names the gateway: it goes, and the profile controller names the new identity', () => {
    const result = migrate(base);
    assert.ok(!istioGateway(result));
    assert.equal(principal(result), 'cluster.local/ns/apps/sa/web-istio');
    const notes = notesOf(result, 'ConfigMap', 'profiles-config-abc');
    assert.equal(notes.length, 1);
    assert.match(notes[0] ?? '', /^changed data\.ISTIO_INGRESS_GATEWAY_PRINCIPAL: .*web-istio/);
  });

  test('a gateway that KServe or Knative builds on is kept beside its conversion, with why', () => {
    const namers = [
      configMap('kubeflow', 'inferenceservice-config', {
        ingress: JSON.stringify({ ingressGateway: 'apps/web', localGateway: 'apps/web' }),
      }),
      configMap('knative-serving', 'config-istio', {
        'gateway.apps.web': 'istio-ingressgateway.istio-system.svc',
      }),
    ];
    for (const namer of namers) {
      const result = migrate([...base, namer]);
      assert.ok(istioGateway(result), namer.metadata.name);
      assert.ok(has(result, 'Gateway', 'apps', 'web'));
      assert.ok(
        notesOf(result, 'Gateway', 'web').some((n) =>
          n.includes(`ConfigMap ${namer.metadata.namespace}/${namer.metadata.name}`),
        ),
        namer.metadata.name,
      );
      // What the controllers create next is routed through the kept gateway: the profile controller keeps
      // admitting its identity, and the report gives the patch for when it goes.
      assert.equal(principal(result), oldGatewayPrincipal);
      assert.ok(
        notesOf(result, 'ConfigMap', 'profiles-config-abc').some(
          (n) =>
            n.startsWith('action') &&
            n.includes('kubectl patch configmap -n kubeflow profiles-config-abc') &&
            n.includes('web-istio'),
        ),
      );
    }
  });

  test('a gateway the notebook controller writes every notebook onto for any host stays the one front door, not converted', () => {
    const notebooks = configMap('kubeflow', 'notebook-controller-config-x', {
      USE_ISTIO: 'true',
      ISTIO_GATEWAY: 'apps/web',
    });
    const result = migrate([...base, notebooks]);
    assert.ok(istioGateway(result));
    assert.ok(!result.objects.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('gateway.')));
    assert.ok(!result.objects.some((o) => o.kind === 'HTTPRoute'));
    assert.deepEqual(find(result, 'VirtualService', 'apps', 'ui'), routed);
    assert.ok(
      notesOf(result, 'Gateway', 'web').some(
        (n) => n.startsWith('action') && /kept, not converted: it stays the one front door for "\*"/.test(n),
      ),
    );
    assert.equal(principal(result), oldGatewayPrincipal);
  });

  test('KServe with enableGatewayApi does not keep the Istio gateway', () => {
    const kserve = configMap('kubeflow', 'inferenceservice-config', {
      ingress: JSON.stringify({
        enableGatewayApi: true,
        kserveIngressGateway: 'apps/web',
        ingressGateway: 'apps/web',
        localGateway: 'apps/web',
      }),
    });
    assert.ok(!istioGateway(migrate([...base, kserve])));
  });
});

describe('migrate: NetworkPolicies', () => {
  const netpol = (namespace: string, name: string, spec: JsonRecord): KubeObject => ({
    ...object('networking.k8s.io/v1', 'NetworkPolicy', namespace, name),
    spec,
  });
  const fromGateway = netpol('apps', 'from-gateway', {
    podSelector: { matchLabels: { app: 'ui' } },
    ingress: [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'istio-system' } },
            podSelector: { matchLabels: { app: 'istio-ingressgateway' } },
          },
        ],
        ports: [{ port: 8080 }],
      },
    ],
  });
  const result = migrate([...ingress, ns('apps'), ...app('ui'), routed, fromGateway]);
  const ingressOf = (r: MigrationResult) =>
    spec(find(r, 'NetworkPolicy', 'apps', 'from-gateway'))['ingress'] as {
      from: JsonRecord[];
      ports: JsonRecord[];
    }[];

  test("a peer that admitted the old gateway's pods admits the converted gateway's pods too", () => {
    assert.deepEqual(ingressOf(result)[0]?.from[1], {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'apps' } },
      podSelector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'web' } },
    });
    assert.ok(
      notesOf(result, 'NetworkPolicy', 'from-gateway').some((n) => n.includes('converted gateway apps/web')),
    );
  });

  test("an egress rule that let pods reach the old gateway's pods lets them reach the converted gateway's", () => {
    const toGateway = netpol('apps', 'to-gateway', {
      podSelector: { matchLabels: { app: 'ui' } },
      policyTypes: ['Egress'],
      egress: [
        {
          to: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'istio-system' } },
              podSelector: { matchLabels: { app: 'istio-ingressgateway' } },
            },
          ],
        },
      ],
    });
    const r = migrate([...ingress, ns('apps'), ...app('ui'), routed, toGateway]);
    const egress = spec(find(r, 'NetworkPolicy', 'apps', 'to-gateway'))['egress'] as { to: JsonRecord[] }[];
    assert.deepEqual(egress[0]?.to[1], {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'apps' } },
      podSelector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'web' } },
    });
    assert.ok(
      notesOf(r, 'NetworkPolicy', 'to-gateway').some((n) => n.startsWith('changed spec.egress[0].to:')),
    );
  });

  test('a rule limiting the ports of pods going ambient admits HBONE (15008) too; in a namespace kept in sidecar mode it does not', () => {
    assert.deepEqual(ingressOf(result)[0]?.ports, [{ port: 8080 }, { protocol: 'TCP', port: 15008 }]);
    const kept = migrate([
      ...ingress,
      ns('apps', { 'istio-injection': 'enabled', 'kfmesh.io/mode': 'sidecar' }),
      ...app('ui'),
      routed,
      fromGateway,
    ]);
    assert.deepEqual(ingressOf(kept)[0]?.ports, [{ port: 8080 }]);
  });
});

describe('migrate: authorization', () => {
  const base = [ns('apps'), ...app('ui'), ...app('api')];

  test('classification: principals, namespaces, ports and source/destination conditions are L4', () => {
    assert.deepEqual(
      l7AttributesOf({
        from: [{ source: { principals: ['a'], namespaces: ['b'], ipBlocks: ['10.0.0.0/8'] } }],
        to: [{ operation: { ports: ['80'] } }],
        when: [{ key: 'source.namespace', values: ['x'] }],
      }),
      [],
    );
    assert.deepEqual(
      l7AttributesOf({
        from: [{ source: { requestPrincipals: ['*'] } }],
        to: [{ operation: { methods: ['GET'], paths: ['/x'] } }],
        when: [{ key: 'request.headers[x]', values: ['y'] }],
      }),
      ['operation.methods', 'operation.paths', 'request.headers[x]', 'source.requestPrincipals'],
    );
    // ztunnel does not read the remote (X-Forwarded-For) address: L7, as the simulator's ztunnel holds it.
    assert.deepEqual(
      l7AttributesOf({
        from: [{ source: { remoteIpBlocks: ['10.0.0.0/8'] } }],
        when: [{ key: 'remote.ip', values: ['10.0.0.1'] }],
      }),
      ['remote.ip', 'source.remoteIpBlocks'],
    );
  });

  test('CUSTOM and AUDIT policies, which ztunnel does not run, go to a waypoint like L7 ones', () => {
    const custom = policy('apps', 'ext-authz', {
      selector: { matchLabels: { app: 'ui' } },
      action: 'CUSTOM',
      provider: { name: 'oauth2-proxy' },
      rules: [{ to: [{ operation: { ports: ['8080'] } }] }],
    });
    const r = migrate([...base, custom]);
    assert.deepEqual(spec(find(r, 'AuthorizationPolicy', 'apps', 'ext-authz'))['targetRefs'], [
      { group: '', kind: 'Service', name: 'ui' },
    ]);
    assert.ok(has(r, 'Gateway', 'apps', 'waypoint'));
  });

  test('an L4 policy stays at ztunnel as it is; no waypoint', () => {
    const l4 = policy('apps', 'ui', {
      selector: { matchLabels: { app: 'ui' } },
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/apps/sa/api'] } }] }],
    });
    const result = migrate([...base, l4]);
    assert.deepEqual(find(result, 'AuthorizationPolicy', 'apps', 'ui'), l4);
    assert.ok(!result.objects.some((o) => o.kind === 'Gateway'));
    assert.equal(find(result, 'Service', 'apps', 'ui').metadata.labels?.['istio.io/use-waypoint'], undefined);
  });

  test('a mixed policy: the waypoint enforces it whole; ztunnel keeps the whole-L4 rules and admits the waypoint', () => {
    const result = migrate([
      ...base,
      policy('apps', 'api', {
        action: 'ALLOW',
        selector: { matchLabels: { app: 'api' } },
        rules: [
          { from: [{ source: { principals: ['cluster.local/ns/apps/sa/ui'] } }] },
          {
            from: [{ source: { principals: ['cluster.local/ns/apps/sa/batch'] } }],
            to: [{ operation: { methods: ['GET'] } }],
          },
        ],
      }),
    ]);
    const atWaypoint = spec(find(result, 'AuthorizationPolicy', 'apps', 'api'));
    assert.deepEqual(atWaypoint['targetRefs'], [{ group: '', kind: 'Service', name: 'api' }]);
    assert.equal((atWaypoint['rules'] as unknown[]).length, 2);
    const atZtunnel = spec(find(result, 'AuthorizationPolicy', 'apps', 'api-l4'));
    assert.deepEqual(atZtunnel['selector'], { matchLabels: { app: 'api' } });
    // batch's rule is not kept at ztunnel on its principal alone: that would let batch in without the GET check.
    assert.deepEqual(atZtunnel['rules'], [
      { from: [{ source: { principals: ['cluster.local/ns/apps/sa/ui'] } }] },
      { from: [{ source: { principals: ['cluster.local/ns/apps/sa/waypoint'] } }] },
    ]);
    const wp = find(result, 'Gateway', 'apps', 'waypoint');
    assert.equal(spec(wp)['gatewayClassName'], 'istio-waypoint');
    const api = find(result, 'Service', 'apps', 'api');
    assert.equal(api.metadata.labels?.['istio.io/use-waypoint'], 'waypoint');
    assert.equal(api.metadata.labels?.['istio.io/ingress-use-waypoint'], 'true');
    assert.equal(find(result, 'Service', 'apps', 'ui').metadata.labels?.['istio.io/use-waypoint'], undefined);
  });

  test('a DENY with HTTP conditions: ztunnel denies on the L4 part of each rule, except the waypoint (fail closed)', () => {
    const deny = {
      action: 'DENY' as const,
      rules: [
        { from: [{ source: { namespaces: ['untrusted'] } }] },
        { to: [{ operation: { paths: ['/admin*'] } }] },
        {
          from: [{ source: { principals: ['p'], requestPrincipals: ['*'] } }],
          to: [{ operation: { methods: ['GET'] } }],
        },
      ],
    };
    assert.deepEqual(ztunnelPart(deny, ['w']), {
      action: 'DENY',
      rules: [
        deny.rules[0],
        // Paths only: everything that skips the waypoint is denied.
        { from: [{ source: { notPrincipals: ['w'] } }] },
        { from: [{ source: { principals: ['p'], notPrincipals: ['w'] } }] },
      ],
    });
    assert.equal(ztunnelPart({ action: 'CUSTOM', rules: deny.rules }, ['w']), undefined);
  });

  test('a root-namespace policy with a selector reaches every namespace: a copy per namespace targets its Services', () => {
    const result = migrate([
      ...base,
      ns('other'),
      deployment('other', 'api', { app: 'api' }),
      service('other', 'api', { app: 'api' }),
      ns('istio-system', {}),
      policy('istio-system', 'no-admin', {
        action: 'DENY',
        selector: { matchLabels: { app: 'api' } },
        rules: [{ to: [{ operation: { paths: ['/admin'] } }] }],
      }),
    ]);
    for (const namespace of ['apps', 'other'])
      assert.deepEqual(spec(find(result, 'AuthorizationPolicy', namespace, 'no-admin'))['targetRefs'], [
        { group: '', kind: 'Service', name: 'api' },
      ]);
    const l4 = spec(find(result, 'AuthorizationPolicy', 'istio-system', 'no-admin-l4'));
    assert.deepEqual(l4['rules'], [
      {
        from: [
          {
            source: {
              notPrincipals: ['cluster.local/ns/apps/sa/waypoint', 'cluster.local/ns/other/sa/waypoint'],
            },
          },
        ],
      },
    ]);
  });

  test('a namespace-wide L7 policy (the Profile owner policy) targets the namespace waypoint', () => {
    const result = migrate([
      ...base,
      policy('apps', 'ns-owner-access-istio', {
        rules: [
          { when: [{ key: 'request.headers[kubeflow-userid]', values: ['user@example.com'] }] },
          { when: [{ key: 'source.namespace', values: ['apps'] }] },
        ],
      }),
    ]);
    const owner = spec(find(result, 'AuthorizationPolicy', 'apps', 'ns-owner-access-istio'));
    assert.deepEqual(owner['targetRefs'], [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' },
    ]);
    const l4 = spec(find(result, 'AuthorizationPolicy', 'apps', 'ns-owner-access-istio-l4'));
    assert.equal(l4['selector'], undefined);
    assert.deepEqual(l4['rules'], [
      { when: [{ key: 'source.namespace', values: ['apps'] }] },
      { from: [{ source: { principals: ['cluster.local/ns/apps/sa/waypoint'] } }] },
    ]);
    const labels = find(result, 'Namespace', '', 'apps').metadata.labels ?? {};
    assert.equal(labels['istio.io/use-waypoint'], 'waypoint');
    assert.equal(labels['istio.io/dataplane-mode'], 'ambient');
    assert.equal(labels['istio-injection'], undefined);
  });

  test("a Profile's owner policy: the profile controller's stays as it is, the waypoint form goes beside it under kfmesh's name", () => {
    const owner = policy('apps', 'ns-owner-access-istio', {
      rules: [
        { when: [{ key: 'request.headers[kubeflow-userid]', values: ['user@example.com'] }] },
        { when: [{ key: 'source.namespace', values: ['apps'] }] },
      ],
    });
    const profile: KubeObject = {
      apiVersion: 'kubeflow.org/v1',
      kind: 'Profile',
      metadata: { name: 'apps' },
      spec: { owner: { kind: 'User', name: 'user@example.com' } },
    };
    const result = migrate([...base, profile, owner]);
    // The profile controller would revert an edit of its policy on its next reconcile.
    assert.deepEqual(find(result, 'AuthorizationPolicy', 'apps', 'ns-owner-access-istio'), owner);
    const onWaypoint = spec(find(result, 'AuthorizationPolicy', 'apps', 'ns-owner-access-waypoint'));
    assert.deepEqual(onWaypoint['targetRefs'], [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' },
    ]);
    assert.ok(find(result, 'AuthorizationPolicy', 'apps', 'ns-owner-access-istio-l4'));
  });

  test('a mesh-wide policy stays, and a copy applies it at every waypoint (the waypoint class)', () => {
    const result = migrate([
      ...base,
      ns('istio-system', {}),
      policy('istio-system', 'global-deny-all', {}),
      policy('apps', 'api', {
        selector: { matchLabels: { app: 'api' } },
        rules: [{ to: [{ operation: { methods: ['GET'] } }] }],
      }),
    ]);
    assert.deepEqual(spec(find(result, 'AuthorizationPolicy', 'istio-system', 'global-deny-all')), {});
    assert.deepEqual(spec(find(result, 'AuthorizationPolicy', 'istio-system', 'global-deny-all-waypoints')), {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'GatewayClass', name: 'istio-waypoint' }],
    });
  });
});

describe('migrate: namespaces, workloads and sidecar-only objects', () => {
  test('labels: ambient instead of injection; opted-out pods stay out; pod opt-ins are removed', () => {
    const result = migrate([
      ns('apps'),
      deployment('apps', 'job', { app: 'job' }, 'job', { 'sidecar.istio.io/inject': 'false' }),
      deployment('apps', 'web', { app: 'web' }, 'web', { 'sidecar.istio.io/inject': 'true' }),
    ]);
    const template = (name: string) =>
      (
        (spec(find(result, 'Deployment', 'apps', name))['template'] as JsonRecord)[
          'metadata'
        ] as KubeObject['metadata']
      ).labels;
    assert.equal(template('job')?.['istio.io/dataplane-mode'], 'none');
    assert.equal(template('web')?.['sidecar.istio.io/inject'], undefined);
    // kfmesh's own mode label too: its controller renders the namespace in ambient mode from now on.
    assert.deepEqual(find(result, 'Namespace', '', 'apps').metadata.labels, {
      'istio.io/dataplane-mode': 'ambient',
      'kfmesh.io/mode': 'ambient',
    });
  });

  test('running pods lose their sidecar; Sidecars and EnvoyFilters are left out with what to do', () => {
    const result = migrate([
      ns('apps'),
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'web-0',
          namespace: 'apps',
          labels: { app: 'web', 'security.istio.io/tlsMode': 'istio' },
          annotations: { 'sidecar.istio.io/status': '{}' },
        },
        spec: { containers: [{ name: 'web' }, { name: 'istio-proxy' }] },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'Sidecar',
        metadata: { name: 'default', namespace: 'apps' },
        spec: {},
      },
      {
        apiVersion: 'networking.istio.io/v1alpha3',
        kind: 'EnvoyFilter',
        metadata: { name: 'xff', namespace: 'apps' },
        spec: {},
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'web', namespace: 'apps' },
        spec: { host: 'web', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } },
      },
    ]);
    const pod = find(result, 'Pod', 'apps', 'web-0');
    assert.deepEqual(spec(pod)['containers'], [{ name: 'web' }]);
    assert.deepEqual(pod.metadata.labels, { app: 'web' });
    for (const kind of ['Sidecar', 'EnvoyFilter', 'DestinationRule'])
      assert.ok(!result.objects.some((o) => o.kind === kind), kind);
    assert.ok(notesOf(result, 'EnvoyFilter', 'xff').some((n) => n.startsWith('action')));
    assert.ok(notesOf(result, 'Sidecar', 'default').some((n) => n.startsWith('action')));
  });

  test('a namespace running Knative stays in sidecar mode, and the gateway its routes use stays too', () => {
    const knativeRoute: KubeObject = {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name: 'model', namespace: 'models' },
      spec: {
        gateways: ['apps/web'],
        hosts: ['model.example.com'],
        http: [{ route: [{ destination: { host: 'model' } }] }],
      },
    };
    const isvc: KubeObject = {
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: { name: 'model', namespace: 'models' },
      spec: { predictor: {} },
    };
    const result = migrate([
      ...ingress,
      ns('apps'),
      ns('models'),
      ...app('ui'),
      knativeRoute,
      isvc,
      {
        apiVersion: 'networking.istio.io/v1beta1',
        kind: 'VirtualService',
        metadata: { name: 'ui', namespace: 'apps' },
        spec: { gateways: ['web'], hosts: ['*'], http: [{ route: [{ destination: { host: 'ui' } }] }] },
      },
    ]);
    assert.deepEqual(find(result, 'VirtualService', 'models', 'model'), knativeRoute);
    assert.equal(find(result, 'Namespace', '', 'models').metadata.labels?.['kfmesh.io/mode'], 'sidecar');
    assert.ok(find(result, 'Gateway', 'apps', 'web', 'networking.istio.io'));
    assert.ok(find(result, 'Gateway', 'apps', 'web', 'gateway.networking.k8s.io'));
    assert.ok(notesOf(result, 'InferenceService', 'model').some((n) => /RawDeployment/.test(n)));
  });

  test('mesh routes attach to their Services, which then use a waypoint', () => {
    const result = migrate([
      ns('apps'),
      ...app('ui'),
      ...app('api'),
      {
        apiVersion: 'networking.istio.io/v1beta1',
        kind: 'VirtualService',
        metadata: { name: 'api', namespace: 'apps' },
        spec: {
          hosts: ['api'],
          http: [
            {
              match: [{ headers: { 'x-canary': { prefix: 'y' } } }],
              route: [{ destination: { host: 'ui' } }],
            },
            { route: [{ destination: { host: 'api' } }] },
          ],
        },
      },
    ]);
    const route = spec(find(result, 'HTTPRoute', 'apps', 'api'));
    assert.deepEqual(route['parentRefs'], [{ group: '', kind: 'Service', name: 'api' }]);
    assert.deepEqual((route['rules'] as JsonRecord[])[0]?.['matches'], [
      { headers: [{ name: 'x-canary', type: 'RegularExpression', value: 'y.*' }] },
    ]);
    assert.equal(
      find(result, 'Service', 'apps', 'api').metadata.labels?.['istio.io/use-waypoint'],
      'waypoint',
    );
    assert.ok(find(result, 'Gateway', 'apps', 'waypoint'));
  });
});

describe('migrate: output and report', () => {
  const input = [
    ...ingress,
    ns('apps'),
    ...app('ui'),
    policy('apps', 'ui', {
      selector: { matchLabels: { app: 'ui' } },
      rules: [{ to: [{ operation: { paths: ['/x'] } }] }],
    }),
    {
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name: 'ui', namespace: 'apps' },
      spec: {
        gateways: ['web'],
        hosts: ['*'],
        http: [{ match: [{ uri: { prefix: '/ui' } }], route: [{ destination: { host: 'ui' } }] }],
      },
    },
  ];

  test('same input in any order: the same output and report', () => {
    const a = migrate(input);
    const b = migrate([...input].reverse());
    assert.deepEqual(a.objects, b.objects);
    assert.equal(reportToJson(a.report), reportToJson(b.report));
    assert.equal(reportToMarkdown(a.report), reportToMarkdown(b.report));
  });

  test('every input object has an entry; the Markdown names each outcome', () => {
    const result = migrate(input);
    assert.equal(result.report.entries.length, input.length);
    const md = reportToMarkdown(result.report);
    assert.match(md, /^# Migration to ambient mode/);
    assert.match(md, /\| `VirtualService apps\/ui` \(test\.yaml\) \| converted \| `HTTPRoute apps\/ui` \|/);
    assert.match(
      md,
      /\| `Gateway \(gateway\.networking\.k8s\.io\) apps\/waypoint` \| the waypoint of namespace apps/,
    );
    const json = JSON.parse(reportToJson(result.report)) as { summary: Record<string, number> };
    assert.equal(json.summary['objects'], input.length);
  });

  test('durations as Gateway API writes them', () => {
    assert.equal(gatewayDuration('300s'), '300s');
    assert.equal(gatewayDuration('0.5s'), '500ms');
    assert.equal(gatewayDuration('2m'), '120s');
    assert.equal(gatewayDuration('soon'), undefined);
  });
});
