/**
 * The migration keeps what a NetworkPolicy admits when ambient mode blurs it: the sources when a waypoint
 * comes between them and the pod (a DENY at the waypoint), and the ports when HBONE brings every
 * connection on 15008 (a DENY at ztunnel); each checked by tracing both configurations.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JsonRecord, KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { checkEquivalence } from '../../src/verify/equivalence.ts';

const ns = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'istio-injection': 'enabled', ...labels } },
});

const deployment = (
  namespace: string,
  name: string,
  labels: Record<string, string>,
  sa = name,
): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace },
  spec: {
    selector: { matchLabels: labels },
    template: { metadata: { labels }, spec: { serviceAccountName: sa, containers: [{ name }] } },
  },
});

const object = (apiVersion: string, kind: string, namespace: string, name: string, spec: JsonRecord) => ({
  apiVersion,
  kind,
  metadata: { name, namespace },
  spec,
});

/**
 * `apps/api` has an L7 policy (so a waypoint serves it) and NetworkPolicies that admit, on its HTTP port,
 * namespace `team-a` and the pods `app: ui` of its own namespace, and on its metrics port an IP block.
 * `apps/batch` and `apps/batch-2` share a service account; only the first is `app: ui`-like (`role: ui`).
 */
const platform = (extra: KubeObject[] = []): KubeObject[] => [
  ns('apps'),
  ns('team-a', { team: 'a' }),
  ns('team-b'),
  deployment('apps', 'api', { app: 'api' }),
  object('v1', 'Service', 'apps', 'api', {
    selector: { app: 'api' },
    ports: [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'http-metrics', port: 9090, targetPort: 9090 },
    ],
  }),
  deployment('apps', 'ui', { app: 'ui' }),
  deployment('apps', 'other', { app: 'other' }),
  deployment('team-a', 'client', { app: 'client' }),
  deployment('team-b', 'client', { app: 'client' }),
  object('security.istio.io/v1', 'AuthorizationPolicy', 'apps', 'api-paths', {
    selector: { matchLabels: { app: 'api' } },
    rules: [{ to: [{ operation: { paths: ['/v1/*'] } }] }],
  }),
  object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api', {
    podSelector: { matchLabels: { app: 'api' } },
    ingress: [
      {
        from: [
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } } },
          { podSelector: { matchLabels: { app: 'ui' } } },
        ],
        ports: [{ port: 8080 }],
      },
      { from: [{ ipBlock: { cidr: '192.168.0.0/16' } }], ports: [{ port: 9090 }] },
    ],
  }),
  ...extra,
];

function migrated(objects: KubeObject[]) {
  return migrateToAmbient(Snapshot.of(objects, 'test.yaml'));
}

const spec = (o: KubeObject | undefined) => (o?.['spec'] ?? {}) as JsonRecord;

const denyOf = (objects: readonly KubeObject[]) =>
  objects.find((o) => o.kind === 'AuthorizationPolicy' && o.metadata.name === 'api-network-policy') as
    (KubeObject & { spec: JsonRecord }) | undefined;

describe('migrate: NetworkPolicy sources at the waypoint', () => {
  const input = platform();
  const result = migrated(input);

  test('a DENY for the Service, port by port, of every source the NetworkPolicies refused', () => {
    assert.deepEqual(denyOf(result.objects)?.spec, {
      targetRefs: [{ group: '', kind: 'Service', name: 'api' }],
      action: 'DENY',
      rules: [
        {
          from: [{ source: { notNamespaces: ['team-a'], notPrincipals: ['cluster.local/ns/apps/sa/ui'] } }],
          to: [{ operation: { ports: ['80'] } }],
        },
        { from: [{ source: { notIpBlocks: ['192.168.0.0/16'] } }], to: [{ operation: { ports: ['9090'] } }] },
      ],
    });
    const added = result.report.added.find((a) => a.object.name === 'api-network-policy');
    assert.match(added?.reason ?? '', /behind a waypoint the pods see the waypoint as the source/);
  });

  test('verify traces both: nothing the NetworkPolicies refused is answered after, and what they admitted still is', () => {
    const check = checkEquivalence(Snapshot.of(input), Snapshot.of(result.objects));
    assert.equal(check.errors, 0, JSON.stringify(check.groups.filter((g) => g.severity === 'error')));
    assert.equal(check.warnings, 0, JSON.stringify(check.groups.filter((g) => g.severity === 'warning')));
    const open = result.objects.filter((o) => o !== denyOf(result.objects));
    const without = checkEquivalence(Snapshot.of(input), Snapshot.of(open));
    assert.ok(without.errors > 0, 'the DENY is what keeps team-b out');
  });

  test("the pods' policy admits the waypoint's pods on 15008, or nothing the waypoint sends would arrive", () => {
    const rules = spec(result.objects.find((o) => o.kind === 'NetworkPolicy'))['ingress'] as JsonRecord[];
    assert.deepEqual(rules.at(-1), {
      from: [
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'apps' } },
          podSelector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'waypoint' } },
        },
      ],
      ports: [{ protocol: 'TCP', port: 15008 }],
    });
    // Where a rule already takes the waypoint's pods (every pod of the namespace), none is added.
    const sameNamespace = object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'same-namespace', {
      podSelector: {},
      ingress: [{ from: [{ podSelector: {} }] }],
    });
    const r = migrated(platform([sameNamespace]));
    assert.ok(
      r.objects
        .filter((o) => o.kind === 'NetworkPolicy')
        .every((o) => JSON.stringify(o).indexOf('gateway-name') < 0),
    );
  });

  test('a pod selector takes a service account only when it takes every pod of it; the rest is refused and reported', () => {
    const shared = [
      deployment('apps', 'batch', { app: 'batch', role: 'ui' }, 'batch'),
      deployment('apps', 'batch-2', { app: 'batch-2' }, 'batch'),
      object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api-role', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { role: 'ui' } } }], ports: [{ port: 8080 }] }],
      }),
    ];
    const r = migrated(platform(shared));
    const source = (denyOf(r.objects)?.spec['rules'] as { from: { source: JsonRecord }[] }[])[0]?.from[0]
      ?.source;
    assert.deepEqual(source?.['notPrincipals'], ['cluster.local/ns/apps/sa/ui']);
    const notes = r.report.entries
      .filter((e) => e.object.name === 'api-role')
      .flatMap((e) => e.notes.map((n) => n.message));
    assert.ok(notes.some((n) => n.includes('admits only some pods of cluster.local/ns/apps/sa/batch')));
  });

  test('a namespace selected by label: listed by name, and the report says a later one must be added', () => {
    const byLabel = object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api', {
      podSelector: { matchLabels: { app: 'api' } },
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'a' } } }] }],
    });
    const r = migrated([...platform().filter((o) => o.kind !== 'NetworkPolicy'), byLabel]);
    const rules = denyOf(r.objects)?.spec['rules'] as { from: { source: JsonRecord }[]; to: unknown }[];
    assert.equal(rules.length, 1, 'both ports admit the same sources: one rule');
    assert.deepEqual(rules[0]?.from[0]?.source, { notNamespaces: ['team-a'] });
    assert.deepEqual(rules[0]?.to, [{ operation: { ports: ['80', '9090'] } }]);
    const entry = r.report.entries.find((e) => e.object.kind === 'NetworkPolicy');
    assert.ok(
      entry?.notes.some((n) => n.kind === 'action' && n.message.includes('selects namespaces by label')),
    );
  });

  test('no DENY where the policies admit every pod of the cluster, or select no pod behind the waypoint', () => {
    const everyone = object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api', {
      podSelector: { matchLabels: { app: 'api' } },
      ingress: [{ from: [{ namespaceSelector: {}, podSelector: {} }] }],
    });
    assert.equal(
      denyOf(migrated([...platform().filter((o) => o.kind !== 'NetworkPolicy'), everyone]).objects),
      undefined,
    );
    const elsewhere = object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api', {
      podSelector: { matchLabels: { app: 'ui' } },
      ingress: [{ from: [{ podSelector: {} }] }],
    });
    assert.equal(
      denyOf(migrated([...platform().filter((o) => o.kind !== 'NetworkPolicy'), elsewhere]).objects),
      undefined,
    );
  });
});

describe('migrate: NetworkPolicy ports at ztunnel', () => {
  // `apps/api` without an L7 policy (no waypoint): its policy admits only the metrics port, from anyone.
  const input = [
    ...platform().filter((o) => o.kind !== 'NetworkPolicy' && o.kind !== 'AuthorizationPolicy'),
    object('networking.k8s.io/v1', 'NetworkPolicy', 'apps', 'api', {
      podSelector: { matchLabels: { app: 'api' } },
      ingress: [{ ports: [{ port: 9090 }] }],
    }),
  ];
  const result = migrated(input);
  const ports = result.objects.find((o) => o.metadata.name === 'api-network-policy-ports');

  test('over HBONE every connection arrives on 15008: a DENY for identified connections on the ports the policy did not admit', () => {
    assert.deepEqual(spec(ports), {
      selector: { matchLabels: { app: 'api' } },
      action: 'DENY',
      rules: [
        { from: [{ source: { principals: ['*'] } }], to: [{ operation: { ports: ['8080'] } }] },
        { from: [{ source: { principals: ['*'] } }], to: [{ operation: { notPorts: ['8080', '9090'] } }] },
      ],
    });
  });

  test('verify: nothing opens with it; without it, the HTTP port the policy closed answers', () => {
    assert.equal(checkEquivalence(Snapshot.of(input), Snapshot.of(result.objects)).errors, 0);
    const open = result.objects.filter((o) => o !== ports);
    assert.ok(checkEquivalence(Snapshot.of(input), Snapshot.of(open)).errors > 0);
  });
});
