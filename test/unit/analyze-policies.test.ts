/** The policy rules (KFM601, KFM602) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { app, ns, only, policy } from './analyze-fixtures.ts';

describe('KFM601 policy-selects-no-workload', () => {
  const base = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api'), ns('istio-system', {})];

  test('a selector no workload of its namespace carries, or a namespace without workloads', () => {
    const typo = only(
      [...base, policy('apps', 'p', { selector: { matchLabels: { app: 'apii' } } })],
      'KFM601',
    );
    assert.match(typo[0]?.message ?? '', /selects app=apii, which no workload with a proxy in apps carries/);
    assert.equal(typo[0]?.istio?.[0]?.code, 'IST0127');
    const empty = only([...base, ns('empty', {}), policy('empty', 'p', {})], 'KFM601');
    assert.match(
      empty[0]?.message ?? '',
      /applies to the workloads of empty, and empty has none with a proxy/,
    );
  });

  test('a root-namespace policy matches workloads of every namespace; without a selector it is mesh-wide', () => {
    assert.deepEqual(
      only([...base, policy('istio-system', 'p', { selector: { matchLabels: { app: 'api' } } })], 'KFM601'),
      [],
    );
    assert.deepEqual(only([...base, policy('istio-system', 'p', {})], 'KFM601'), []);
    assert.equal(
      only([...base, policy('istio-system', 'p', { selector: { matchLabels: { app: 'x' } } })], 'KFM601')
        .length,
      1,
    );
  });

  test('a workload without a proxy does not count', () => {
    const plain = [ns('plain', {}), ...app('plain', 'api')];
    assert.equal(
      only([...plain, policy('plain', 'p', { selector: { matchLabels: { app: 'api' } } })], 'KFM601').length,
      1,
    );
  });
});

describe('KFM602 policy-names-missing-namespace', () => {
  const base = [ns('apps', {}), ns('prod-a', {})];
  const from = (source: Record<string, unknown>) => policy('apps', 'p', { rules: [{ from: [{ source }] }] });

  test('a name or pattern that matches no namespace, in namespaces and notNamespaces', () => {
    const found = only(
      [...base, from({ namespaces: ['prod-*', 'bogus-*', 'apps'], notNamespaces: ['*-b', '*'] })],
      'KFM602',
    );
    assert.deepEqual(
      found.map((f) => f.field),
      ['spec.rules[0].from[0].source.namespaces[1]', 'spec.rules[0].from[0].source.notNamespaces[0]'],
    );
    assert.equal(found[0]?.istio?.[0]?.code, 'IST0101');
  });

  test('an input without Namespace objects cannot tell: nothing', () => {
    assert.deepEqual(only([from({ namespaces: ['bogus'] })], 'KFM602'), []);
  });
});

describe('KFM420 http-deny-refuses-tcp', () => {
  const base = [ns('apps', { 'istio-injection': 'enabled' }), ...app('apps', 'api'), ns('istio-system', {})];
  const deny = (rules: unknown[]) =>
    policy('apps', 'p', { selector: { matchLabels: { app: 'api' } }, action: 'DENY', rules });

  test('a DENY rule of only HTTP conditions: sources of request principals, or operations without ports', () => {
    const tokens = only([...base, deny([{ from: [{ source: { notRequestPrincipals: ['*'] } }] }])], 'KFM420');
    assert.equal(tokens.length, 1);
    assert.equal(tokens[0]?.field, 'spec.rules[0]');
    assert.deepEqual(tokens[0]?.istio, [
      { analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0133' },
    ]);
    assert.equal(only([...base, deny([{ to: [{ operation: { paths: ['/admin'] } }] }])], 'KFM420').length, 1);
    // The second rule is the one that has only HTTP conditions.
    const second = only(
      [
        ...base,
        deny([
          { from: [{ source: { namespaces: ['x'] } }] },
          { to: [{ operation: { methods: ['DELETE'] } }] },
        ]),
      ],
      'KFM420',
    );
    assert.equal(second[0]?.field, 'spec.rules[1]');
  });

  test('a port, a TCP-level source, or another action: nothing', () => {
    for (const rules of [
      [{ to: [{ operation: { paths: ['/admin'], ports: ['8080'] } }] }],
      [{ from: [{ source: { principals: ['a'], requestPrincipals: ['*'] } }] }],
      [{ from: [{ source: { namespaces: ['x'] } }], to: [{ operation: { notPorts: ['9090'] } }] }],
      [{ when: [{ key: 'request.headers[x]', values: ['1'] }] }],
    ])
      assert.deepEqual(only([...base, deny(rules)], 'KFM420'), [], JSON.stringify(rules));
    assert.deepEqual(
      only(
        [
          ...base,
          policy('apps', 'p', {
            action: 'ALLOW',
            rules: [{ to: [{ operation: { paths: ['/admin'] } }] }],
          }),
        ],
        'KFM420',
      ),
      [],
    );
  });

  test('names the TCP ports it refuses (a warning); with none in its scope, an info', () => {
    const service = base.find((o) => o.kind === 'Service');
    assert.ok(service);
    const withPorts = (ports: unknown[]) => ({
      ...service,
      spec: { ...(service['spec'] as object), ports },
    });
    const rule = deny([{ to: [{ operation: { hosts: ['a'] } }] }]);
    const tcp = only(
      [
        ...base.filter((o) => o !== service),
        withPorts([
          { name: 'http', port: 80 },
          { name: 'tcp-db', port: 5432 },
        ]),
        rule,
      ],
      'KFM420',
    );
    assert.match(tcp[0]?.message ?? '', /refused whole: apps\/api:5432 \(TCP\)/);
    assert.equal(tcp[0]?.severity, 'warning');
    // A sniffed port serves HTTP requests with the HTTP filter: not refused whole.
    const sniffed = only([...base.filter((o) => o !== service), withPorts([{ port: 9000 }]), rule], 'KFM420');
    assert.match(sniffed[0]?.message ?? '', /no port under its scope is served as TCP today/);
    assert.equal(sniffed[0]?.severity, 'info');
  });

  test("on a gateway: its servers that pass TCP through, not its Service's ports", () => {
    const gatewayPods = [ns('istio-system', {}), ...app('istio-system', 'ingress')];
    const gateway = (servers: unknown[]): KubeObject => ({
      apiVersion: 'networking.istio.io/v1',
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: 'istio-system' },
      spec: { selector: { app: 'ingress' }, servers },
    });
    const jwt = policy('istio-system', 'require-jwt', {
      selector: { matchLabels: { app: 'ingress' } },
      action: 'DENY',
      rules: [{ from: [{ source: { notRequestPrincipals: ['*'] } }] }],
    });
    const http = gateway([{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }]);
    const found = only([...gatewayPods, http, jwt], 'KFM420');
    assert.equal(found[0]?.severity, 'info');
    const tcp = gateway([{ port: { number: 5432, name: 'tcp', protocol: 'TCP' }, hosts: ['*'] }]);
    const refused = only([...gatewayPods, tcp, jwt], 'KFM420');
    assert.match(refused[0]?.message ?? '', /refused whole: gateway .*gw port 5432 \(TCP\)/);
    assert.equal(refused[0]?.severity, 'warning');
  });
});
