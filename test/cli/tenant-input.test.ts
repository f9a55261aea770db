/**
 * What a tenant can write, through the command line (issue "Safe on what tenants write"): a
 * VirtualService whose regex makes a backtracking engine take exponential time, RE2's own syntax (POSIX
 * classes, named groups, inline flags, `\z`, Unicode classes) and Envoy's rewrite of every match, regexes
 * that RE2 refuses, and out-of-range numbers. The bomb and RE2's meaning are checked on the built-in
 * example platform with the tenant's VirtualService beside it; bad values, names and bytes must stop the
 * command at the field (exit 2), never with an internal error.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { stringify } from 'yaml';
import { kfmeshBin, runKfmesh, writeManifest, writeText } from '../cli-process.ts';

const example = runKfmesh(['example']).stdout;
const host = 'ml-pipeline.kubeflow.svc.cluster.local';
const from = 'kubeflow-user-example-com/curl-inside-mesh';

/** The example platform and the tenant's objects, as one folder. */
function platformWith(objects: readonly unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-tenant-'));
  writeFileSync(join(dir, 'example.yaml'), example);
  writeFileSync(join(dir, 'tenant.yaml'), objects.map((o) => stringify(o)).join('---\n'));
  return dir;
}

function virtualService(name: string, http: unknown[]): unknown {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name, namespace: 'kubeflow-user-example-com' },
    spec: { hosts: [host], gateways: ['mesh'], http },
  };
}

const route = { destination: { host } };
const aaa = (n: number) => `/${'a'.repeat(n)}!`;
/**
 * `(/?a+)+$` beside a prefix naming `/aaa…a!`: exponential for a backtracking engine on `/aaa…a!` (the
 * equivalence check draws that path from the prefix). A last rule keeps every other path routed as before.
 */
const bomb = virtualService('bomb', [
  { name: 'bomb', match: [{ uri: { regex: '(/?a+)+$' } }], route: [route] },
  { name: 'prefix', match: [{ uri: { prefix: aaa(40) } }], route: [route] },
  { name: 'rest', route: [route] },
]);

interface Trace {
  response: { code: number; flags: string };
  hops: { route?: string; path?: string }[];
}

function trace(dir: string, path: string): Trace {
  const run = runKfmesh(['trace', dir, '--from', from, '--url', `http://${host}:8888${path}`, '-o', 'json']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Trace;
}

describe('a regex that would backtrack', () => {
  const dir = platformWith([bomb]);
  // A backtracking engine takes longer than any timeout here at 40 characters (it doubles per character).
  test('traces a 40-character and a 10,000-character path at once', { timeout: 60_000 }, () => {
    assert.equal(trace(dir, aaa(40)).hops[0]?.route, 'prefix');
    assert.equal(trace(dir, aaa(10_000)).hops[0]?.route, 'rest');
    assert.equal(trace(dir, '/aaa/aa').hops[0]?.route, 'bomb');
  });

  test(
    'verify --equivalence with it finishes and finds what it finds without it',
    { timeout: 120_000 },
    () => {
      const before = mkdtempSync(join(tmpdir(), 'kfmesh-tenant-'));
      writeFileSync(join(before, 'example.yaml'), example);
      const run = runKfmesh(['verify', '--equivalence', before, dir]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /No request denied before is allowed after/);
    },
  );
});

describe("RE2's meaning, as Envoy evaluates it", () => {
  const cases: [regex: string, matches: string, misses: string][] = [
    ['/v1/[[:digit:]]+/x', '/v1/42/x', '/v1/d]/x'],
    ['/(?P<model>[a-z]+)/predict', '/iris/predict', '/Iris/predict'],
    ['/v1(?i:/API)/x', '/v1/aPi/x', '/V1/api/x'],
    ['/a(?i)B', '/ab', '/Ab'],
    ['/models/\\pL+\\z', '/models/iris', '/models/x1'],
  ];
  for (const [i, [regex, matches, misses]] of cases.entries())
    test(`${regex}: ${JSON.stringify(matches)} takes the regex rule, ${JSON.stringify(misses)} does not`, () => {
      // One VirtualService of a host counts (the oldest), so each case has its own platform.
      const own = platformWith([
        virtualService(`re2-${i}`, [
          { name: 'regex', match: [{ uri: { regex } }], route: [route] },
          { name: 'rest', route: [route] },
        ]),
      ]);
      assert.equal(trace(own, matches).hops[0]?.route, 'regex');
      assert.equal(trace(own, misses).hops[0]?.route, 'rest');
    });
  test('uriRegexRewrite replaces every match, with \\1 groups', () => {
    const dir = platformWith([
      virtualService('rewrite', [
        {
          rewrite: { uriRegexRewrite: { match: '/v([[:digit:]])', rewrite: '/version-\\1' } },
          route: [route],
        },
      ]),
    ]);
    assert.equal(trace(dir, '/v1/models/v2').hops[0]?.path, '/version-1/models/version-2');
  });

  test('an RE2-valid rewrite that JavaScript cannot compile traces (it used to exit 70)', () => {
    const dir = platformWith([
      virtualService('rewrite', [
        { rewrite: { uriRegexRewrite: { match: '^/v1(?i:/API)?/(.*)', rewrite: '/\\1' } }, route: [route] },
      ]),
    ]);
    assert.equal(trace(dir, '/v1/Api/models').hops[0]?.path, '/models');
  });
});

describe('values the data plane cannot run stop the command at the field (exit 2)', () => {
  const bad: [what: string, object: unknown, field: RegExp][] = [
    [
      'a regex RE2 does not compile',
      virtualService('bad', [{ match: [{ uri: { regex: '([' } }], route: [route] }]),
      /spec\.http\[0\]\.match\[0\]\.uri\.regex: not an RE2 regex: .*missing closing \]/,
    ],
    [
      'a Perl look-ahead in an HTTPRoute',
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'bad', namespace: 'kubeflow-user-example-com' },
        spec: {
          rules: [{ matches: [{ path: { type: 'RegularExpression', value: '/v1/(?!x).*' } }] }],
        },
      },
      /spec\.rules\[0\]\.matches\[0\]\.path\.value: not an RE2 regex/,
    ],
    [
      'a rewrite naming a group the regex lacks',
      virtualService('bad', [
        { rewrite: { uriRegexRewrite: { match: '/v1/(.*)', rewrite: '/\\2' } }, route: [route] },
      ]),
      /uriRegexRewrite\.rewrite: the substitution names group \\2, the regex has 1 group/,
    ],
    [
      'a negative weight',
      virtualService('bad', [{ route: [{ ...route, weight: -50 }] }]),
      /spec\.http\[0\]\.route\[0\]\.weight: weight -50 is negative/,
    ],
    [
      'a fault percentage above 100',
      virtualService('bad', [
        { fault: { abort: { httpStatus: 500, percentage: { value: 150 } } }, route: [route] },
      ]),
      /fault\.abort\.percentage\.value: percentage 150 is neither 0 nor from 0\.0001 to 100/,
    ],
  ];
  for (const [what, object, field] of bad) {
    test(`${what}: analyze reports it as a finding at the field`, () => {
      const run = runKfmesh(['analyze', writeManifest([object], 'tenant.yaml')]);
      assert.equal(run.code, 1, run.stderr);
      const [path = '', message = ''] = field.source.split(/: (.*)/s);
      assert.match(
        run.stdout,
        new RegExp(
          `tenant\\.yaml:\\d+:\\d+: error KFM42[35]( \\(IST\\d+\\))?: \\S+ kubeflow-user-example-com/bad \\S*${path}\\n  .*${message}`,
        ),
      );
    });
    for (const command of ['trace', 'verify', 'migrate'])
      test(`${what}: ${command}`, () => {
        const file = writeManifest([object], 'tenant.yaml');
        const args =
          command === 'trace'
            ? ['trace', file, '--from', from, '--url', `http://${host}/`]
            : command === 'verify'
              ? ['verify', '--equivalence', file, file]
              : ['migrate', file, '--to', 'ambient'];
        const run = runKfmesh(args);
        assert.equal(run.code, 2, run.stderr);
        assert.match(
          run.stderr,
          new RegExp(`tenant\\.yaml:\\d+:\\d+: \\S+ kubeflow-user-example-com/bad: \\S*${field.source}`),
        );
        assert.doesNotMatch(run.stderr, /\n\s+at |internal error/);
      });
  }
});

describe('names and bytes the API server would refuse', () => {
  const service = (metadata: Record<string, unknown>) =>
    `apiVersion: v1\nkind: Service\nmetadata:\n${Object.entries(metadata)
      .map(([k, v]) => `  ${k}: ${String(v)}\n`)
      .join('')}spec:\n  ports:\n  - {name: http, port: 80}\n`;

  test('an object without a name: exit 2 at its metadata', () => {
    const run = runKfmesh(['analyze', writeText(service({ namespace: 'apps' }), 'noname.yaml')]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /noname\.yaml:4:3: Service apps\/: metadata: the object has no metadata\.name/);
  });

  test('a name of a megabyte: exit 2, the name cut in the message', () => {
    const long = 'a'.repeat(1 << 20);
    const run = runKfmesh(['analyze', writeText(service({ name: long, namespace: 'apps' }), 'long.yaml')]);
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /Service apps\/a{40}… \(1048576 characters\): metadata\.name: expected at most 253 characters/,
    );
    assert.ok(run.stderr.length < 400, 'the message stays short');
  });

  test('bytes that are not UTF-8: exit 2 at their line and column, from a file and from standard input', () => {
    const bytes = Buffer.from(service({ name: 'caf\xe9', namespace: 'apps' }), 'latin1');
    const file = writeText('', 'latin1.yaml');
    writeFileSync(file, bytes);
    const fromFile = runKfmesh(['analyze', file]);
    assert.equal(fromFile.code, 2);
    assert.match(fromFile.stderr, /latin1\.yaml:4:12: not UTF-8 text: byte 0xe9 at offset 50/);
    const piped = spawnSync(process.execPath, [kfmeshBin, 'analyze', '-'], {
      input: bytes,
      encoding: 'utf8',
    });
    assert.equal(piped.status, 2);
    assert.match(piped.stderr, /<stdin>:4:12: not UTF-8 text/);
  });
});
