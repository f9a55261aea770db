/** The policy rules (KFM601, KFM602) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
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
