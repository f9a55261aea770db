/** `kfmesh verify --cases`: request expectations written by users, through the real program. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runKfmesh, writeText } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';

const ambient = writeText(runKfmesh(['example', '--mode', 'ambient']).stdout, 'ambient.yaml');
const published = join(projectRoot, 'examples/ambient-cases.yaml');

type Result = {
  passed: number;
  failed: number;
  cases: { name: string; passed: boolean; failures: string[]; actual: { code: number; hops: string[] } }[];
};

describe('kfmesh verify --cases', () => {
  test("docs/cli.md's cases hold on the ambient example: exit 0, one PASS line each", () => {
    const run = runKfmesh(['verify', ambient, '--cases', published]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(run.stdout.match(/^PASS /gm)?.length, 5);
    assert.match(run.stdout, /\n5 passed, 0 failed\n$/);
  });

  test('the same cases on the sidecar example fail where ambient differs: exit 1, what was expected and what came', () => {
    const run = runKfmesh(['verify', '--cases', published, '-o', 'json']);
    assert.equal(run.code, 1);
    const result = JSON.parse(run.stdout) as Result;
    assert.equal(result.passed + result.failed, 5);
    const owner = result.cases[0];
    assert.equal(owner?.passed, false);
    assert.ok(
      owner?.failures.some((f) =>
        /^expected hops \[gateway, waypoint, ztunnel\], got \[gateway, sidecar\]$/.test(f),
      ),
      owner?.failures.join('\n'),
    );
    const api = result.cases.find((c) => c.name.startsWith('a pipeline step calls the pipelines API'));
    assert.ok(
      api?.failures.some((f) => /^expected hops \[ztunnel, sidecar\], got \[sidecar, sidecar\]$/.test(f)),
      api?.failures.join('\n'),
    );
  });

  test('a failing expectation names itself and the case line in text', () => {
    const cases = writeText(
      [
        '- name: the pipelines UI answers GET /pipeline/ from outside',
        '  request: {from: external, url: "http://kubeflow.example.com/pipeline/"}',
        '  expect: {code: 200, hops: [gateway, sidecar]}',
        '',
      ].join('\n'),
      'cases.yaml',
    );
    const run = runKfmesh(['verify', '--cases', cases]);
    assert.equal(run.code, 1);
    assert.match(
      run.stdout,
      /^FAIL the pipelines UI answers GET \/pipeline\/ from outside {2}\(.*cases\.yaml:1\)$/m,
    );
    assert.match(run.stdout, /^ {5}expected code 200, got 403$/m);
    assert.match(run.stdout, /^ {5}expected hops \[gateway, sidecar\], got \[gateway\]$/m);
    assert.match(run.stdout, /^ {5}outcome: RBAC: access denied at gateway/m);
  });

  const bad: [string, string, RegExp][] = [
    ['not a list', 'cases: {a: 1}\n', /cases\.yaml:1:\d+: cases: expected a list of cases/],
    [
      'no name',
      '- request: {from: external, url: "http://x/"}\n  expect: {code: 200}\n',
      /cases\.yaml:1:3: \[0\]\.name: expected a non-empty string/,
    ],
    [
      'no expectation',
      '- name: n\n  request: {from: external, url: "http://x/"}\n  expect: {}\n',
      /cases\.yaml:3:11: \[0\]\.expect: expected a mapping with at least one of/,
    ],
    [
      'unknown expectation',
      '- name: n\n  request: {from: a/b, url: "http://x/"}\n  expect: {status: 200}\n',
      /cases\.yaml:3:\d+: \[0\]\.expect\.status: unknown expectation/,
    ],
    [
      'a bad hop kind',
      '- name: n\n  request: {from: a/b, url: "http://x/"}\n  expect: {hops: [envoy]}\n',
      /\[0\]\.expect\.hops: expected a list of sidecar, gateway, ztunnel, waypoint/,
    ],
    ['broken YAML', '- name: [\n', /cases\.yaml:\d+:\d+: /],
  ];
  for (const [name, text, message] of bad) {
    test(`a bad case file (${name}): exit 2 with the file, line and field`, () => {
      const run = runKfmesh(['verify', '--cases', writeText(text, 'cases.yaml')]);
      assert.equal(run.code, 2, run.stdout);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, message);
    });
  }

  test('usage: a missing file, or --cases with --equivalence, exit 2', () => {
    const missing = runKfmesh(['verify', '--cases', '/nonexistent/cases.yaml']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--cases \/nonexistent\/cases\.yaml: no such file/);
    const both = runKfmesh(['verify', '--equivalence', ambient, ambient, '--cases', published]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /two different checks/);
  });
});
