/**
 * The regex module (mesh/regex.ts): RE2's syntax and meaning, Envoy's rewrite of every match, what cannot
 * run, and where the analyzer reports a pattern found in a cluster (KFM423 for what Istio's validation
 * refuses in a VirtualService, KFM425 for what only Envoy refuses). The property test in
 * test/oracle/regex.test.ts judges the same functions against Go's regexp on drawn patterns.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fullMatch, regexProblem, replaceEvery, rewriteProblem } from '../../src/mesh/regex.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { only } from './analyze-fixtures.ts';

describe("RE2's syntax and meaning", () => {
  test('POSIX classes, named groups, inline flags, \\z and Unicode classes', () => {
    assert.ok(fullMatch('/v1/[[:digit:]]+/x', '/v1/42/x'));
    assert.ok(!fullMatch('/v1/[[:digit:]]+/x', '/v1/d]/x'), 'a POSIX class is not a bracket of characters');
    assert.ok(fullMatch('/(?P<model>[a-z]+)/(?<verb>predict)', '/iris/predict'));
    assert.ok(fullMatch('/v1(?i:/API)/x', '/v1/aPi/x'));
    assert.ok(!fullMatch('/v1(?i:/API)/x', '/V1/api/x'), 'a flag group ends with the group');
    assert.ok(fullMatch('(?s)a.b', 'a\nb'));
    assert.ok(!fullMatch('a.b', 'a\nb'));
    assert.ok(fullMatch('\\pL+\\z', 'λόγος'));
    assert.ok(!fullMatch('\\pL+', 'x1'));
  });

  test('the whole value must match, alternatives included', () => {
    assert.ok(!fullMatch('/a|/b', '/ab'));
    assert.ok(fullMatch('/a|/b', '/b'));
  });

  test(
    'a backtracking pattern takes linear time: (/?a+)+$ on 100,000 characters',
    { timeout: 30_000 },
    () => {
      assert.equal(fullMatch('(/?a+)+$', `/${'a'.repeat(100_000)}!`), false);
    },
  );

  test('a pattern that does not compile matches nothing', () => {
    assert.equal(fullMatch('([', '(['), false);
    assert.equal(fullMatch('/(?!x).*', '/y'), false);
  });
});

describe("Envoy's rewrite", () => {
  test('every match is replaced, \\N names a group, \\\\ is a backslash', () => {
    assert.equal(replaceEvery('/v([0-9])', '/version-\\1', '/v1/models/v2'), '/version-1/models/version-2');
    assert.equal(replaceEvery('^/v1(?i:/API)?/(.*)', '/\\1', '/v1/Api/models'), '/models');
    assert.equal(replaceEvery('a', '\\\\', 'banana'), 'b\\n\\n\\');
    assert.equal(replaceEvery('(x)|(a)', '[\\1]', 'ax'), '[][x]', 'a group that took no part is empty');
  });

  test('an empty match where the last match ended is skipped, as RE2 does', () => {
    assert.equal(replaceEvery('a*', 'X', 'baaac'), 'XbXcX');
    assert.equal(replaceEvery('x*', '-', 'a😀'), '-a-😀-');
  });

  test('a substitution RE2 refuses leaves the path alone', () => {
    assert.equal(replaceEvery('/v1/(.*)', '/\\2', '/v1/x'), '/v1/x');
    assert.equal(replaceEvery('/v1/(.*)', '/\\q', '/v1/x'), '/v1/x');
    assert.match(rewriteProblem('/v1/(.*)', '/\\2')?.message ?? '', /names group \\2, the regex has 1 group/);
    assert.equal(rewriteProblem('/v1/(.*)', '/$1\\1')?.message, undefined, '$ is a literal');
  });
});

describe('what cannot run', () => {
  test('empty, longer than 1,024 bytes, not RE2; a name given twice is refused by RE2 only', () => {
    assert.equal(regexProblem('')?.message, 'the regex is empty');
    assert.match(regexProblem('λ'.repeat(513))?.message ?? '', /1026 bytes long; Istio takes at most 1024/);
    assert.equal(regexProblem('a'.repeat(1024)), undefined);
    assert.match(regexProblem('([')?.message ?? '', /^not an RE2 regex: .*missing closing \]/);
    assert.equal(regexProblem('([')?.envoyOnly, undefined);
    assert.equal(regexProblem('(?P<a>x)(?P<a>y)')?.envoyOnly, true);
  });

  const virtualService = (http: unknown[]): KubeObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'tenant', namespace: 'apps' },
    spec: { hosts: ['iris'], http },
  });
  const route = [{ destination: { host: 'iris' } }];

  test("read from a cluster: KFM423 where Istio's validation refuses, KFM425 where only Envoy does", () => {
    const refused = virtualService([
      { match: [{ uri: { regex: '([' } }, { headers: { x: { regex: '*' } } }], route },
      { match: [{ withoutHeaders: { x: { regex: '*' } } }], route: [{ ...route[0], weight: -50 }] },
      { fault: { delay: { fixedDelay: '1s', percentage: { value: 150 } } }, route },
    ]);
    assert.deepEqual(
      only([refused], 'KFM423').map((f) => f.field),
      [
        'spec.http[0].match[0].uri.regex',
        'spec.http[0].match[1].headers.x.regex',
        'spec.http[1].route[0].weight',
        'spec.http[2].fault.delay.percentage.value',
      ],
    );
    const envoyOnly = virtualService([
      { match: [{ uri: { regex: '(?P<a>x)(?P<a>y)' } }], route },
      { rewrite: { uriRegexRewrite: { match: '/v1/(.*)', rewrite: '/\\2' } }, route },
    ]);
    assert.deepEqual(only([envoyOnly], 'KFM423'), []);
    assert.deepEqual(
      only([envoyOnly], 'KFM425').map((f) => f.field),
      ['spec.http[0].match[0].uri.regex', 'spec.http[1].rewrite.uriRegexRewrite.rewrite'],
    );
    const httpRoute: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'tenant', namespace: 'apps' },
      spec: {
        rules: [
          { matches: [{ path: { type: 'RegularExpression', value: '/v1/(?!x).*' } }] },
          { matches: [{ headers: [{ name: 'x', type: 'RegularExpression', value: '[[:digit:]]+' }] }] },
        ],
      },
    };
    assert.deepEqual(
      only([httpRoute], 'KFM425').map((f) => f.field),
      ['spec.rules[0].matches[0].path.value'],
    );
  });
});
