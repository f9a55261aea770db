/** `kfmesh migrate` and `kfmesh verify --equivalence` through the real program. */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { listItems, runKfmesh, writeManifest, writeText } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');

describe('kfmesh migrate --to ambient', () => {
  test('the example platform: YAML on stdout, a summary on stderr, the Markdown report in --report', () => {
    const report = join(dirname(example), 'report.md');
    const run = runKfmesh(['migrate', example, '--to', 'ambient', '--report', report]);
    assert.equal(run.code, 0, run.stderr);
    const kinds = parseAllDocuments(run.stdout).map((d) => (d.toJS() as { kind: string }).kind);
    // Waypoints for L7; the Istio Gateway stays the front door (its notebook routes stay in sidecar mode).
    assert.ok(kinds.includes('Gateway'));
    assert.ok(kinds.includes('VirtualService'));
    assert.match(run.stderr, /^kfmesh: migrated \d+ objects: \d+ converted/);
    const text = readFileSync(report, 'utf8');
    assert.match(text, /^# Migration to ambient mode/);
    assert.match(text, /## Needs a person/);
    assert.match(
      text,
      /`AuthorizationPolicy kubeflow\/ml-pipeline-ui` \(.*platform\.yaml:\d+:\d+\) \| converted/,
    );
    assert.deepEqual(
      readdirSync(dirname(report)).filter((f) => f.endsWith('.tmp')),
      [],
    );
  });

  test('a JSON report with .json; -o json prints a v1 List; byte-identical runs', () => {
    const report = join(dirname(example), 'report.json');
    const args = ['migrate', example, '--to', 'ambient', '-o', 'json', '--report', report];
    const first = runKfmesh(args);
    assert.equal(first.code, 0, first.stderr);
    assert.ok(listItems(first.stdout).length > 0);
    const parsed = JSON.parse(readFileSync(report, 'utf8')) as {
      summary: { objects: number };
      entries: unknown[];
    };
    assert.equal(parsed.entries.length, parsed.summary.objects);
    const reportText = readFileSync(report, 'utf8');
    const second = runKfmesh(args);
    assert.equal(second.stdout, first.stdout);
    assert.equal(readFileSync(report, 'utf8'), reportText);
  });

  test('the report in docs/example-migration.md is the one migrate writes for the example, and docs/cli.md quotes it', () => {
    const report = join(dirname(example), 'example-report.md');
    assert.equal(runKfmesh(['migrate', '--to', 'ambient', '--report', report]).code, 0);
    const written = readFileSync(report, 'utf8');
    assert.equal(readFileSync(join(projectRoot, 'docs/example-migration.md'), 'utf8'), written);
    const summary = written.split('\n')[2] ?? '';
    assert.ok(readFileSync(join(projectRoot, 'docs/cli.md'), 'utf8').includes(`> ${summary}`));
  });

  test('kfmesh example --mode ambient is the migration of the example', () => {
    const ambient = runKfmesh(['example', '--mode', 'ambient']);
    assert.equal(ambient.code, 0, ambient.stderr);
    assert.equal(ambient.stdout, runKfmesh(['migrate', '--to', 'ambient']).stdout);
  });

  test('the migrated example, traced: the pipelines UI through the one front door and the waypoint', () => {
    const migrated = writeText(runKfmesh(['example', '--mode', 'ambient']).stdout, 'ambient.yaml');
    const claims = { iss: 'http://dex.auth.svc.cluster.local:5556/dex', sub: 'user' };
    const token = `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
    const run = runKfmesh([
      'trace',
      migrated,
      '--from',
      'external',
      '--via',
      'istio-system/istio-ingressgateway',
      '--url',
      'http://kubeflow.example.com/pipeline/',
      '-H',
      `Authorization: Bearer ${token}`,
      '-o',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const r = JSON.parse(run.stdout) as {
      response: { code: number };
      hops: { kind: string; policy?: string }[];
    };
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => `${h.kind} ${h.policy ?? ''}`),
      [
        'gateway istio-system/istio-ingressgateway',
        'waypoint kubeflow/ml-pipeline-ui',
        'ztunnel kubeflow/ml-pipeline-ui-l4',
      ],
    );
  });

  const badInput: [string, string[], string | undefined, RegExp][] = [
    ['--to missing', ['migrate'], undefined, /--to is required/],
    ['--to sidecar', ['migrate', '--to', 'sidecar'], undefined, /--to must be one of ambient/],
    ['-o xml', ['migrate', '--to', 'ambient', '-o', 'xml'], undefined, /-o must be one of yaml, json/],
    ['broken YAML', ['migrate', '-', '--to', 'ambient'], 'kind: [', /<stdin>:1:\d+/],
    [
      'a malformed inferenceservice-config',
      ['migrate', '-', '--to', 'ambient'],
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inferenceservice-config, namespace: kubeflow}\ndata:\n  deploy: "{not json"\n',
      /<stdin>:1:1: ConfigMap kubeflow\/inferenceservice-config: data\.ingress: missing/,
    ],
  ];
  for (const [name, args, stdin, message] of badInput) {
    test(`bad input (${name}): exit 2, a message, nothing written`, () => {
      const report = join(dirname(example), `never-${name.replace(/\W+/g, '-')}.md`);
      const run = runKfmesh([...args, '--report', report], stdin);
      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, message);
      assert.equal(existsSync(report), false);
    });
  }
});

describe('kfmesh verify --equivalence', () => {
  const migrated = writeText(runKfmesh(['migrate', example, '--to', 'ambient']).stdout, 'after.yaml');

  test('the example and its migration: exit 0, no request opened', () => {
    const run = runKfmesh(['verify', '--equivalence', example, migrated]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^\d+ flows of the platform \(.*\): 0 broken\.\n/);
    assert.match(
      run.stdout,
      /\n\d+ requests compared on both configurations: \d+ unchanged; 0 errors \(denied before, answered after\)/,
    );
    assert.match(
      run.stdout,
      /No request denied before is allowed after\.\n\n\d+ probes of what the profile controller, notebook controller, KServe create next: \d+ failed \(0 opening access\)\./,
    );
  });

  test("a policy that admits everyone in a Profile's namespace: the probes say a new notebook there opens to another user, exit 1", () => {
    const dir = mkdtempSync(join(tmpdir(), 'kfmesh-probe-'));
    writeFileSync(join(dir, 'after.yaml'), readFileSync(migrated));
    writeFileSync(
      join(dir, 'allow-all.yaml'),
      'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: allow-all, namespace: kubeflow-user-example-com}\nspec: {rules: [{}]}\n',
    );
    const run = runKfmesh(['verify', '--equivalence', example, dir, '-o', 'json']);
    assert.equal(run.code, 1, run.stderr);
    const { probes } = JSON.parse(run.stdout) as {
      probes: { opened: number; results: { name: string; failed: boolean; intent: string }[] };
    };
    assert.ok(probes.opened > 0);
    assert.ok(
      probes.results.some(
        (r) =>
          r.failed &&
          r.intent === 'refused' &&
          r.name ===
            'another user is refused by a new notebook in the existing Profile kubeflow-user-example-com',
      ),
    );
  });

  test('a migration that allows everyone at the pipelines API: exit 1, the error group first', () => {
    const objects = listItems<{
      kind: string;
      metadata: { name: string; namespace?: string };
      spec?: { rules?: unknown[] };
    }>(runKfmesh(['migrate', example, '--to', 'ambient', '-o', 'json']).stdout);
    const policy = objects.find(
      (o) =>
        o.kind === 'AuthorizationPolicy' &&
        o.metadata.namespace === 'kubeflow' &&
        o.metadata.name === 'ml-pipeline',
    );
    assert.ok(policy?.spec);
    policy.spec.rules = [{}];
    const run = runKfmesh([
      'verify',
      '--equivalence',
      example,
      writeManifest(objects, 'widened.yaml'),
      '-o',
      'json',
    ]);
    assert.equal(run.code, 1, run.stderr);
    const result = JSON.parse(run.stdout) as {
      errors: number;
      groups: { severity: string; cause: string }[];
    };
    assert.ok(result.errors > 0);
    assert.equal(result.groups[0]?.severity, 'error');
  });

  test('usage: two paths', () => {
    const run = runKfmesh(['verify', '--equivalence', example]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /two paths/);
  });
});
