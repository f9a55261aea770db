/**
 * Properties of `migrate --to ambient` over generated sidecar-mode platforms (workloads in two namespaces,
 * an ingress gateway and its routes, mesh routes, AuthorizationPolicies of every shape: L4, L7, mixed,
 * ALLOW, DENY, CUSTOM, AUDIT, namespace-wide, on the gateway, with every kind of source, operation and
 * condition field; and NetworkPolicies by namespace, pod, address and port): it never throws, its output
 * does not depend on input order, and the equivalence check finds no request that the sidecar platform
 * denied and the ambient one answers.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import {
  checkEquivalence,
  outcomeOf,
  requestShapes,
  type EquivalenceResult,
  type MatrixRequest,
  type RequestOutcome,
} from '../../src/verify/equivalence.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { Output, type Phase } from '../../src/ambient/output.ts';
import { objectKey, refOf } from '../../src/model/object.ts';
import { examplePlatform } from '../../src/example/platform.ts';

// Seeded as the oracle's generated platforms are, so that a run can be replayed: KFMESH_PROPERTY_SEED
// picks another (a failure prints its seed and path).
const seed = Number(process.env['KFMESH_PROPERTY_SEED'] ?? 20261206);

const namespaces = ['a', 'b'];
const workloads = ['w0', 'w1', 'w2'];
const gatewayPrincipal = 'cluster.local/ns/istio-system/sa/ingress';
const principalOf = (ns: string, w: string) => `cluster.local/ns/${ns}/sa/${w}`;

// Address blocks cover the whole pod network (10/8) or none of it: the migration replaces gateway pods and
// adds waypoints, whose addresses it cannot know, so a block that takes some pods of the network and not
// others has no ambient equivalent to check against.
const sourceArb = fc.oneof(
  fc.record({
    principals: fc.subarray(
      [...namespaces.flatMap((ns) => workloads.map((w) => principalOf(ns, w))), gatewayPrincipal],
      { minLength: 1, maxLength: 3 },
    ),
  }),
  fc.record({ namespaces: fc.subarray([...namespaces, 'istio-system'], { minLength: 1, maxLength: 2 }) }),
  fc.record({ requestPrincipals: fc.constant(['*']) }),
  fc.record({ notRequestPrincipals: fc.constant(['*']) }),
  fc.record({
    notPrincipals: fc.subarray(
      namespaces.flatMap((ns) => workloads.map((w) => principalOf(ns, w))),
      { minLength: 1, maxLength: 2 },
    ),
  }),
  fc.record({ notNamespaces: fc.subarray(namespaces, { minLength: 1, maxLength: 1 }) }),
  fc.record({ ipBlocks: fc.constantFrom(['10.0.0.0/8'], ['192.168.0.0/16']) }),
  fc.record({ remoteIpBlocks: fc.constantFrom(['10.0.0.0/8'], ['203.0.113.0/24']) }),
);
const operationArb = fc.oneof(
  fc.record({ methods: fc.subarray(['GET', 'POST'], { minLength: 1 }) }),
  fc.record({ paths: fc.subarray(['/a', '/b/*', '/admin'], { minLength: 1 }) }),
  fc.record({ notPaths: fc.subarray(['/a', '/public/*'], { minLength: 1 }) }),
  fc.record({ ports: fc.constant(['8080']) }),
  fc.record({ notPorts: fc.constant(['8080']) }),
  fc.record({ notMethods: fc.constant(['POST']) }),
  fc.record({
    hosts: fc.subarray(['w0.a.svc.cluster.local', 'w1.b.svc.cluster.local', '*'], { minLength: 1 }),
  }),
);
const conditionArb = fc.oneof(
  fc.record({
    key: fc.constant('request.headers[x-user]'),
    values: fc.subarray(['alice', 'bob'], { minLength: 1 }),
  }),
  fc.record({ key: fc.constant('request.headers[x-user]'), notValues: fc.constant(['*']) }),
  fc.record({ key: fc.constant('source.namespace'), values: fc.subarray(namespaces, { minLength: 1 }) }),
  fc.record({ key: fc.constant('source.ip'), values: fc.constant(['10.0.0.0/8']) }),
  fc.record({ key: fc.constant('remote.ip'), values: fc.constant(['203.0.113.0/24']) }),
  fc.record({ key: fc.constant('destination.port'), values: fc.constant(['8080']) }),
);
const ruleArb = fc.record(
  {
    from: fc.array(
      sourceArb.map((source) => ({ source })),
      { minLength: 1, maxLength: 2 },
    ),
    to: fc.array(
      operationArb.map((operation) => ({ operation })),
      { minLength: 1, maxLength: 1 },
    ),
    when: fc.array(conditionArb, { minLength: 1, maxLength: 2 }),
  },
  { requiredKeys: [] },
);
const policyArb = fc.record({
  namespace: fc.constantFrom(...namespaces, 'istio-system'),
  target: fc.constantFrom<string | undefined>(...workloads, 'ingress', undefined),
  action: fc.constantFrom('ALLOW', 'ALLOW', 'DENY', 'DENY', 'CUSTOM', 'AUDIT'),
  rules: fc.array(ruleArb, { minLength: 0, maxLength: 2 }),
});
/** A NetworkPolicy on one workload's pods: sources by namespace, by pod, by address, or none; ports or none. */
const networkPolicyArb = fc.record({
  namespace: fc.constantFrom(...namespaces),
  target: fc.constantFrom(...workloads),
  from: fc.array(
    fc.oneof(
      fc.constantFrom(...namespaces).map((ns) => ({
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      })),
      fc.constantFrom(...workloads).map((w) => ({ podSelector: { matchLabels: { app: w } } })),
      fc.constant({ podSelector: {} }),
      fc.constant({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'istio-system' } } }),
      fc.constant({ ipBlock: { cidr: '10.0.0.0/8', except: ['10.99.0.0/16'] } }),
    ),
    { maxLength: 2 },
  ),
  ports: fc.constantFrom<number[] | undefined>(undefined, [8080], [9090]),
});
const routeArb = fc.record({
  gateway: fc.boolean(),
  namespace: fc.constantFrom(...namespaces),
  host: fc.constantFrom(...workloads),
  // Whole segments: a prefix that is not one ('/a' takes '/admin' in Istio, not in Gateway API) has no exact
  // HTTPRoute form; the migration reports it (migrate.test.ts), and verify shows where requests move.
  prefix: fc.constantFrom('/', '/b/'),
  to: fc.constantFrom(...workloads),
});
const platformArb = fc.record({
  denyAll: fc.boolean(),
  policies: fc.array(policyArb, { maxLength: 4 }),
  networkPolicies: fc.array(networkPolicyArb, { maxLength: 2 }),
  routes: fc.uniqueArray(routeArb, {
    maxLength: 3,
    selector: (r) => `${r.gateway}/${r.namespace}/${r.host}`,
  }),
});

type Platform = typeof platformArb extends fc.Arbitrary<infer T> ? T : never;

function platform(p: Platform): KubeObject[] {
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'istio-system' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'ingress', namespace: 'istio-system' },
      spec: {
        selector: { matchLabels: { app: 'ingress' } },
        template: {
          metadata: { labels: { app: 'ingress', istio: 'ingressgateway' } },
          spec: {
            serviceAccountName: 'ingress',
            containers: [{ name: 'istio-proxy', args: ['proxy', 'router'] }],
          },
        },
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'Gateway',
      metadata: { name: 'web', namespace: 'istio-system' },
      spec: {
        selector: { istio: 'ingressgateway' },
        servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
      },
    },
  ];
  for (const ns of namespaces) {
    objects.push({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { 'istio-injection': 'enabled' } },
    });
    for (const w of workloads) {
      objects.push(
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: w, namespace: ns },
          spec: {
            selector: { matchLabels: { app: w } },
            template: {
              metadata: { labels: { app: w } },
              spec: { serviceAccountName: w, containers: [{ name: w }] },
            },
          },
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: w, namespace: ns },
          spec: { selector: { app: w }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
        },
      );
    }
  }
  if (p.denyAll)
    objects.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'deny-all', namespace: 'istio-system' },
      spec: {},
    });
  p.policies.forEach((policy, i) => {
    const spec: Record<string, unknown> = { action: policy.action, rules: policy.rules };
    if (policy.action === 'CUSTOM') spec['provider'] = { name: 'ext-authz' };
    if (policy.target !== undefined) spec['selector'] = { matchLabels: { app: policy.target } };
    // A root-namespace policy without a selector is mesh-wide; keep generated ones to their namespace.
    if (policy.namespace === 'istio-system' && policy.target === undefined)
      spec['selector'] = { matchLabels: { app: 'ingress' } };
    objects.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: `p${i}`, namespace: policy.namespace },
      spec,
    });
  });
  // The gateway needs an ALLOW when everything is denied by default, as Kubeflow's istio-ingressgateway one.
  if (p.denyAll)
    objects.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'ingress-allow', namespace: 'istio-system' },
      spec: { selector: { matchLabels: { app: 'ingress' } }, rules: [{}] },
    });
  p.networkPolicies.forEach((n, i) => {
    const rule: Record<string, unknown> = {};
    if (n.from.length > 0) rule['from'] = n.from;
    if (n.ports) rule['ports'] = n.ports.map((port) => ({ port }));
    objects.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `n${i}`, namespace: n.namespace },
      spec: { podSelector: { matchLabels: { app: n.target } }, ingress: [rule] },
    });
  });
  p.routes.forEach((r, i) => {
    objects.push({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: `r${i}`, namespace: r.namespace },
      spec: {
        hosts: [r.gateway ? '*' : `${r.host}.${r.namespace}.svc.cluster.local`],
        ...(r.gateway ? { gateways: ['istio-system/web'] } : {}),
        http: [
          {
            match: [{ uri: { prefix: r.prefix } }],
            route: [
              { destination: { host: `${r.to}.${r.namespace}.svc.cluster.local`, port: { number: 80 } } },
            ],
          },
        ],
      },
    });
  });
  return objects;
}

describe('migrate properties', () => {
  test('never throws, and the output does not depend on the input order', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        const objects = platform(p);
        const a = migrateToAmbient(Snapshot.of(objects)).objects;
        const b = migrateToAmbient(Snapshot.of([...objects].reverse())).objects;
        assert.deepEqual(a, b);
      }),
      { numRuns: 60, seed },
    );
  });

  test('opens no access: no request the sidecar platform denies is answered after migration', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        const objects = platform(p);
        const migrated = migrateToAmbient(Snapshot.of(objects)).objects;
        const result = checkEquivalence(Snapshot.of(objects), Snapshot.of(migrated));
        assert.equal(
          result.errors,
          0,
          JSON.stringify(
            result.groups.filter((g) => g.severity === 'error').map((g) => [g.cause, g.examples[0]]),
          ),
        );
      }),
      { numRuns: 40, seed },
    );
  });

  test('every widening of the migration that opens a request, traced request by request, is reported', () => {
    let opening = 0;
    fc.assert(
      fc.property(platformArb, wideningArb, (p, widening) => {
        const objects = platform(p);
        const migrated = migrateToAmbient(Snapshot.of(objects)).objects;
        const widened = widen(migrated, widening);
        const [before, after] = [Snapshot.of(objects), Snapshot.of(widened)];
        // The oracle: every request of the matrix traced on its own, for every client.
        const meshes = [compileMesh(before), compileMesh(after)] as const;
        const { clients, shapes, pods, external } = requestShapes(meshes[0], meshes[1]);
        const requests: MatrixRequest[] = [
          ...clients.flatMap((from) => [...shapes, ...pods].map((shape) => ({ from, ...shape }))),
          ...external,
        ];
        const opens = requests.filter((r) => opened(outcomeOf(meshes[0], r), outcomeOf(meshes[1], r)));
        const result = checkEquivalence(before, after);
        if (opens.length > 0) opening++;
        assert.equal(
          result.errors > 0,
          opens.length > 0,
          `${JSON.stringify(widening)}: verify reports ${result.errors} errors, tracing finds ${opens.length} opened (${JSON.stringify(opens[0])})`,
        );
      }),
      { numRuns: 30, seed },
    );
    // Not vacuous: some of the generated widenings do open requests.
    assert.ok(opening > 0, 'no generated widening opened a request');
  });

  test('the phases are pure: each gives the same edits twice and writes neither the output nor earlier facts', () => {
    const check = (objects: KubeObject[]) => {
      const snapshot = Snapshot.of(objects);
      const output = new CheckingOutput(snapshot);
      const checked = migrateToAmbient(snapshot, {}, output);
      assert.ok(output.phases >= 15, `only ${output.phases} phases ran through the output`);
      output.factsUnchanged();
      assert.deepEqual(checked, migrateToAmbient(snapshot));
    };
    check(examplePlatform());
    fc.assert(
      fc.property(platformArb, (p) => check(platform(p))),
      { numRuns: 30, seed },
    );
  });

  test('client classes are sound: the check traces one client per class and reports what tracing every client does', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        const objects = platform(p);
        const migrated = migrateToAmbient(Snapshot.of(objects)).objects;
        const [before, after] = [Snapshot.of(objects), Snapshot.of(migrated)];
        const counts = (r: EquivalenceResult) => ({
          ...r,
          traces: 0,
          groups: r.groups.map((g) => `${g.severity} ${g.count} ${g.cause}`),
        });
        assert.deepEqual(
          counts(checkEquivalence(before, after)),
          counts(checkEquivalence(before, after, { exhaustive: true })),
        );
      }),
      { numRuns: 40, seed },
    );
  });
});

/** A change that can only widen: an ALLOW of everything, at ztunnel or at a waypoint, or a DENY removed. */
const wideningArb = fc.oneof(
  fc.record({
    kind: fc.constant('allow-all' as const),
    namespace: fc.constantFrom(...namespaces),
    target: fc.constantFrom<string | undefined>(...workloads, undefined),
    atWaypoint: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('drop-deny' as const), index: fc.nat() }),
);
type Widening = typeof wideningArb extends fc.Arbitrary<infer T> ? T : never;

function widen(objects: readonly KubeObject[], w: Widening): KubeObject[] {
  if (w.kind === 'drop-deny') {
    const denies = objects.filter(
      (o) => o.kind === 'AuthorizationPolicy' && (o['spec'] as { action?: string })?.action === 'DENY',
    );
    const dropped = denies[w.index % Math.max(denies.length, 1)];
    return objects.filter((o) => o !== dropped);
  }
  const spec: Record<string, unknown> = { rules: [{}] };
  if (w.target !== undefined && w.atWaypoint)
    spec['targetRefs'] = [{ group: '', kind: 'Service', name: w.target }];
  else if (w.target !== undefined) spec['selector'] = { matchLabels: { app: w.target } };
  return [
    ...objects,
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'widened', namespace: w.namespace },
      spec,
    },
  ];
}

/** Denied before and answered after: what the check calls an error (not a move to another workload). */
function opened(was: RequestOutcome, now: RequestOutcome): boolean {
  if (was.verdict !== 'denied' || now.verdict !== 'allowed') return false;
  return was.refusedBy === undefined || was.refusedBy === now.answeredBy;
}

/**
 * An output that runs each phase twice before applying it: the two runs must give the same edits and
 * leave the output as it was; and the facts each phase returns must still read the same once every later
 * phase has run (no phase writes facts it was given).
 */
class CheckingOutput extends Output {
  phases = 0;
  readonly #facts: { value: unknown; seen: string }[] = [];

  override apply<F>(run: () => Phase<F>): F {
    const before = JSON.stringify(this.result());
    const first = run();
    const second = run();
    assert.deepEqual(second.edits, first.edits, 'a phase gave other edits on a second run');
    assert.equal(JSON.stringify(this.result()), before, 'a phase wrote the output it was given');
    const facts = super.apply(() => first);
    this.#facts.push({ value: facts, seen: factsText(facts) });
    this.phases++;
    return facts;
  }

  factsUnchanged(): void {
    for (const { value, seen } of this.#facts)
      assert.equal(factsText(value), seen, 'a later phase changed facts');
  }
}

/** Facts as text: maps and sets as lists, pods, Services and objects by name, the input left out. */
function factsText(facts: unknown): string {
  return (
    JSON.stringify(facts, (key, value: unknown) => {
      if (key === 'input') return undefined;
      if (value instanceof Map) return [...value.entries()].map(([k, v]) => [label(k), v]);
      if (value instanceof Set) return [...value].map(label);
      return key === '' ? value : label(value);
    }) ?? ''
  );
}

function label(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  if ('metadata' in value && 'kind' in value) return objectKey(refOf(value as KubeObject));
  if ('endpoints' in value || 'proxy' in value)
    return `${String((value as { namespace?: unknown }).namespace)}/${String((value as { name?: unknown }).name)}`;
  return value;
}
