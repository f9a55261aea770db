/** Kubernetes NetworkPolicy in the simulator (docs/semantics.md, NetworkPolicy): one table per rule. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { InputError } from '../../src/model/errors.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { NetworkPolicies } from '../../src/mesh/network-policy.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import type { Workload } from '../../src/mesh/workloads.ts';
import { namespace, pod, service, trace, waypoint } from '../mesh-fixtures.ts';
import { examplePlatform } from '../../src/example/platform.ts';

const netpol = (ns: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec,
});

/** A sidecar client in `client` (labels role=client) calling `app` in `apps` on port 80 → 8080. */
function sidecars(extra: KubeObject[]): KubeObject[] {
  return [
    namespace('client', { 'istio-injection': 'enabled', team: 'a' }),
    namespace('apps'),
    pod('client', 'client', { labels: { role: 'client' }, ip: '10.9.0.5' }),
    pod('apps', 'app', { ip: '10.9.1.5' }),
    service('apps', 'app'),
    ...extra,
  ];
}

const call = (objects: KubeObject[], from = 'client/client-0') =>
  trace(objects, { from, url: 'http://app.apps/' });

describe('NetworkPolicy: which connections pass', () => {
  const mesh = (policies: KubeObject[]) => {
    const m = compileMesh(Snapshot.of(sidecars(policies)));
    const w = (name: string) => m.workloadByName.get(name) as Workload;
    return { policies: m.networkPolicies, client: w('client/client-0'), app: w('apps/app-0') };
  };
  const admits = (policies: KubeObject[], port = 8080) => {
    const { policies: p, client, app } = mesh(policies);
    const v = p.ingress({ workload: client, ip: client.ip }, app, port);
    return v.isolated ? v.allowed : 'open';
  };

  test('a pod no policy selects is open; one a policy selects admits only what a rule admits', () => {
    assert.equal(admits([]), 'open');
    assert.equal(admits([netpol('apps', 'deny', { podSelector: {} })]), false);
    assert.equal(admits([netpol('apps', 'all', { podSelector: {}, ingress: [{}] })]), true);
    // Another namespace's policy selects nothing here.
    assert.equal(admits([netpol('other', 'deny', { podSelector: {} })]), 'open');
  });

  test('peers: pod and namespace selectors (labels and expressions, the name label), each alone or together', () => {
    const from = (peer: Record<string, unknown>) =>
      admits([
        netpol('apps', 'p', { podSelector: { matchLabels: { app: 'app' } }, ingress: [{ from: [peer] }] }),
      ]);
    // A podSelector alone means pods of the policy's own namespace.
    assert.equal(from({ podSelector: {} }), false);
    assert.equal(from({ namespaceSelector: {} }), true);
    assert.equal(from({ namespaceSelector: { matchLabels: { team: 'a' } } }), true);
    assert.equal(
      from({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'client' } } }),
      true,
    );
    const expr = (operator: string, values?: string[]) => ({
      namespaceSelector: { matchExpressions: [{ key: 'team', operator, ...(values ? { values } : {}) }] },
    });
    assert.equal(from(expr('In', ['a', 'b'])), true);
    assert.equal(from(expr('NotIn', ['a'])), false);
    assert.equal(from(expr('Exists')), true);
    assert.equal(from(expr('DoesNotExist')), false);
    assert.equal(from({ namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } }), true);
    assert.equal(from({ namespaceSelector: {}, podSelector: { matchLabels: { role: 'other' } } }), false);
  });

  test('ipBlock with except; ports by number, range (endPort) and name; protocol', () => {
    const client = { ip: '10.9.0.5' };
    const rule = (r: Record<string, unknown>) =>
      admits([netpol('apps', 'p', { podSelector: {}, ingress: [r] })]);
    assert.equal(rule({ from: [{ ipBlock: { cidr: `${client.ip}/32` } }] }), true);
    assert.equal(rule({ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: [`${client.ip}/32`] } }] }), false);
    assert.equal(rule({ ports: [{ port: 8080 }] }), true);
    assert.equal(rule({ ports: [{ port: 80 }] }), false);
    assert.equal(rule({ ports: [{ port: 8000, endPort: 8100 }] }), true);
    assert.equal(rule({ ports: [{ port: 8080, protocol: 'UDP' }] }), false);
    // A named port is the destination pod's container port; the fixture's pod declares none.
    assert.equal(rule({ ports: [{ port: 'http' }] }), false);
  });

  test('egress: a pod with an Egress policy opens only what it admits; Ingress-only policies leave egress open', () => {
    const { policies, client, app } = mesh([
      netpol('client', 'egress', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ port: 53 }] }],
      }),
    ]);
    const v = policies.egress(client, { workload: app, ip: app.ip }, 8080);
    assert.deepEqual(v, { isolated: true, allowed: false, by: ['client/egress'] });
    assert.deepEqual(policies.ingress({ workload: client, ip: client.ip }, app, 8080), { isolated: false });
  });
});

describe('NetworkPolicy in traces', () => {
  test('sidecar mode: a refused connection is dropped, the client sidecar answers 503 UF and the hop names the policy', () => {
    const result = call(sidecars([netpol('apps', 'deny', { podSelector: {} })]));
    assert.equal(result.response.code, 503);
    assert.equal(result.response.flags, 'UF');
    assert.equal(result.hops[0]?.decision, 'deny');
    assert.equal(result.hops[0]?.policy, 'NetworkPolicy apps/deny');
    const admitted = call(
      sidecars([netpol('apps', 'ok', { podSelector: {}, ingress: [{ ports: [{ port: 8080 }] }] })]),
    );
    assert.equal(admitted.response.code, 200);
    assert.ok(admitted.hops[0]?.notes.some((n) => n.includes('NetworkPolicy apps/ok admits')));
  });

  test('ambient mode: ztunnel arrives on 15008 (HBONE), so a policy of application ports must admit 15008', () => {
    const ambient = (policies: KubeObject[]) => [
      namespace('client', { 'istio.io/dataplane-mode': 'ambient' }),
      namespace('apps', { 'istio.io/dataplane-mode': 'ambient' }),
      pod('client', 'client', { ambient: true }),
      pod('apps', 'app', { ambient: true }),
      service('apps', 'app'),
      ...policies,
    ];
    const appPort = netpol('apps', 'app-port', { podSelector: {}, ingress: [{ ports: [{ port: 8080 }] }] });
    assert.equal(call(ambient([appPort])).response.code, 0);
    const hbone = netpol('apps', 'hbone', { podSelector: {}, ingress: [{ ports: [{ port: 15008 }] }] });
    assert.equal(call(ambient([appPort, hbone])).response.code, 200);
  });

  test('through a waypoint the waypoint pod is the source: a policy admitting only the client refuses it', () => {
    const objects = [
      namespace('client', { 'istio.io/dataplane-mode': 'ambient', team: 'a' }),
      namespace('apps', { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }),
      pod('client', 'client', { ambient: true }),
      pod('apps', 'app', { ambient: true }),
      service('apps', 'app'),
      waypoint('apps'),
      netpol('apps', 'from-team-a', {
        podSelector: { matchLabels: { app: 'app' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'a' } } }] }],
      }),
    ];
    const result = call(objects);
    assert.equal(result.response.code, 503);
    assert.ok(
      result.hops.some((h) => h.kind === 'waypoint' && h.policy === 'NetworkPolicy apps/from-team-a'),
    );
  });
});

describe('NetworkPolicy at the ingress gateway: the outside client is a peer too', () => {
  // As Kubeflow 26.03 ships istio-system: every pod isolated, only pods of the namespace admitted.
  const sameNamespace = netpol('istio-system', 'default-allow-same-namespace', {
    podSelector: {},
    ingress: [{ from: [{ podSelector: {} }] }],
  });
  const outside = (objects: KubeObject[]) =>
    trace(objects, { from: 'external', url: 'http://kubeflow.example.com/' });

  test("a policy of the gateway's namespace that admits only its own pods refuses the outside client", () => {
    const open = outside(examplePlatform());
    assert.notEqual(open.response.code, 0);
    const refused = outside([...examplePlatform(), sameNamespace]);
    assert.equal(refused.response.code, 0);
    assert.equal(refused.hops.length, 0);
    assert.match(refused.summary, /NetworkPolicy istio-system\/default-allow-same-namespace refuses/);
  });

  test('an ipBlock of every address admits it, as before', () => {
    const everyone = netpol('istio-system', 'from-anywhere', {
      podSelector: {},
      ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
    });
    assert.equal(
      outside([...examplePlatform(), sameNamespace, everyone]).response.code,
      outside(examplePlatform()).response.code,
    );
  });
});

describe('NetworkPolicy: malformed ones are refused at their field', () => {
  const refused = (spec: Record<string, unknown>) => {
    try {
      new NetworkPolicies(Snapshot.of([netpol('apps', 'bad', spec)], 'np.yaml'));
    } catch (error) {
      assert.ok(error instanceof InputError);
      return error.message;
    }
    return 'accepted';
  };

  test('a selector operator that does not exist, In without values, Exists with values', () => {
    assert.match(
      refused({ podSelector: { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] } }),
      /spec\.podSelector\.matchExpressions\[0\]\.operator: expected In, NotIn, Exists or DoesNotExist/,
    );
    assert.match(
      refused({ podSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } }),
      /needs at least one value/,
    );
    assert.match(
      refused({ podSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } }),
      /takes no values/,
    );
  });

  test('a port out of range, an endPort without port or below it, a bad CIDR or except', () => {
    // The range is the schema's: the snapshot leaves the object out, at the field.
    const [outOfRange] = Snapshot.of(
      [netpol('apps', 'bad', { podSelector: {}, ingress: [{ ports: [{ port: 70000 }] }] })],
      'np.yaml',
    ).problems;
    assert.equal(outOfRange?.context.field, 'spec.ingress[0].ports[0].port');
    assert.equal(outOfRange.message, 'expected an integer from 1 to 65535, got 70000');
    assert.match(
      refused({ podSelector: {}, ingress: [{ ports: [{ endPort: 90 }] }] }),
      /endPort: endPort needs port/,
    );
    assert.match(
      refused({ podSelector: {}, ingress: [{ ports: [{ port: 90, endPort: 80 }] }] }),
      /endPort: expected a port from 90/,
    );
    assert.match(
      refused({ podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0' } }] }] }),
      /cidr: expected a CIDR/,
    );
    assert.match(
      refused({
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.1.0.0/24'] } }] }],
      }),
      /except\[0\]: 10\.1\.0\.0\/24 is not inside 10\.0\.0\.0\/16/,
    );
    assert.equal(refused({ podSelector: {}, ingress: [{ ports: [{ port: 80, endPort: 90 }] }] }), 'accepted');
  });
});
