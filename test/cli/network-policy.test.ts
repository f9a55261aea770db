/** A malformed NetworkPolicy is bad input: exit 2 with the file, line, object and field, for every command that models it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runKfmesh, writeText } from '../cli-process.ts';

const policy = (ports: string) =>
  `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad, namespace: apps}\nspec:\n  podSelector: {}\n  ingress:\n  - ports:\n${ports}`;

test('a port out of range, an endPort without port, a malformed selector: exit 2 at the field', () => {
  const cases: [string, RegExp][] = [
    [
      '    - port: 70000\n',
      /bad\.yaml:8:13: NetworkPolicy apps\/bad: spec\.ingress\[0\]\.ports\[0\]\.port: expected an integer from 1 to 65535/,
    ],
    [
      '    - endPort: 90\n',
      /bad\.yaml:8:\d+: NetworkPolicy apps\/bad: spec\.ingress\[0\]\.ports\[0\]\.endPort: endPort needs port/,
    ],
  ];
  for (const [ports, expected] of cases) {
    const file = writeText(policy(ports), 'bad.yaml');
    for (const args of [
      ['analyze', file],
      ['migrate', '--to', 'ambient', file],
      ['trace', file, '--from', 'external', '--url', 'http://x/'],
    ]) {
      const run = runKfmesh(args);
      assert.equal(run.code, 2, `${args[0]}: ${run.stderr}`);
      assert.match(run.stderr, expected);
      assert.equal(run.stdout, '');
    }
  }
  const selector = writeText(
    'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad, namespace: apps}\nspec:\n  podSelector:\n    matchExpressions:\n    - {key: app, operator: Equals, values: [x]}\n',
    'bad.yaml',
  );
  const run = runKfmesh(['analyze', selector]);
  assert.equal(run.code, 2);
  assert.match(
    run.stderr,
    /bad\.yaml:7:\d+: .*spec\.podSelector\.matchExpressions\[0\]\.operator: expected In, NotIn, Exists or DoesNotExist/,
  );
});
