/**
 * Every command's output, byte for byte, on the example platform, the conformance cases and the real
 * Kubeflow platform: a digest of each run (exit code, standard output, standard error, files written) is
 * kept in test/data/golden/outputs.json. A refactoring must leave every digest as it was; a change of
 * behaviour updates the file on purpose (`KFMESH_UPDATE_GOLDEN=1 npm test`) and says so in its commit.
 *
 * The commands run in this process through `main` (the same code path as the `kfmesh` binary, without
 * a Node start per run), in a scratch folder so that paths printed in outputs are the same every run.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';

import { tmpdir } from 'node:os';

import { join } from 'node:path';

import { after, before, describe, test } from 'node:test';

import { stringify } from 'yaml';

import { main } from '../../src/cli/main.ts';

import { discoverCases, projectRoot } from '../conformance/cases.ts';

const goldenFile = join(projectRoot, 'test/data/golden/outputs.json');
const realPlatform = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');
const update = process.env['KFMESH_UPDATE_GOLDEN'] === '1';

interface Digest {
  code: number;
  stdout: string;
  stderr: string;
  files?: Record<string, string>;
}

const sha = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

const golden: Record<string, Digest> = existsSync(goldenFile)
  ? (JSON.parse(readFileSync(goldenFile, 'utf8')) as Record<string, Digest>)
  : {};
const seen: Record<string, Digest> = {};

/** Runs `kfmesh ARGS` in the scratch folder; returns what it printed (and the digest of written files). */
async function run(
  args: readonly string[],
  files: readonly string[] = [],
): Promise<Digest & { out: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  const written = Object.fromEntries(files.map((f) => [f, sha(readFileSync(f, 'utf8'))]));
  return {
    code,
    stdout: sha(stdout),
    // Progress lines come every 2 s of work, so how many there are depends on the machine.
    stderr: sha(stderr.replace(/^kfmesh: traced \d+ of \d+ requests\n/gm, '')),
    ...(files.length > 0 ? { files: written } : {}),
    out: stdout,
  };
}

/** Runs and compares with (or, when updating, records) the digest under `name`. */
async function check(name: string, args: readonly string[], files: readonly string[] = []): Promise<string> {
  const { out, ...digest } = await run(args, files);
  seen[name] = digest;
  if (!update) {
    assert.ok(golden[name], `no golden digest for "${name}"; record with KFMESH_UPDATE_GOLDEN=1`);
    assert.deepEqual(digest, golden[name], `kfmesh ${args.join(' ')}: the output changed`);
  }
  return out;
}

let scratch = '';
const home = process.cwd();
before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'kfmesh-golden-'));
  process.chdir(scratch);
  symlinkSync(join(projectRoot, 'examples'), 'examples');
});
after(() => {
  process.chdir(home);
  rmSync(scratch, { recursive: true, force: true });
  if (update) {
    const merged = Object.fromEntries(
      Object.entries({ ...golden, ...seen }).sort(([a], [b]) => a.localeCompare(b)),
    );
    writeFileSync(goldenFile, `${JSON.stringify(merged, null, 1)}\n`);
  }
});

describe('byte-identical outputs: the example platform', () => {
  test('example, render, migrate, analyze, trace, verify', async () => {
    writeFileSync('platform.yaml', await check('example', ['example']));
    writeFileSync('ambient.yaml', await check('example ambient', ['example', '--mode', 'ambient']));
    await check('render', ['render', 'platform.yaml']);
    await check('render ambient json', ['render', 'platform.yaml', '--mode', 'ambient', '-o', 'json']);
    writeFileSync(
      'before.yaml',
      await check('render no-mesh', ['render', 'platform.yaml', '--no-mesh-gateway']),
    );
    writeFileSync(
      'migrated.yaml',
      await check(
        'migrate',
        ['migrate', 'platform.yaml', '--to', 'ambient', '--report', 'report.md'],
        ['report.md'],
      ),
    );
    await check(
      'migrate json',
      ['migrate', 'platform.yaml', '--to', 'ambient', '-o', 'json', '--report', 'r.json'],
      ['r.json'],
    );
    for (const format of ['text', 'json', 'sarif'])
      await check(`analyze ${format}`, [
        'analyze',
        'platform.yaml',
        'before.yaml',
        '-o',
        format,
        '--fail-on',
        'never',
      ]);
    await check('analyze ambient', ['analyze', 'ambient.yaml', '-o', 'json', '--fail-on', 'never']);
    await check('analyze migrated', ['analyze', 'migrated.yaml', '-o', 'json', '--fail-on', 'never']);
    const seed = [
      '--from',
      'kubeflow-user-example-com/curl-inside-mesh',
      '--url',
      'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict',
      '--method',
      'POST',
    ];
    await check('trace before', [
      'trace',
      'platform.yaml',
      'before.yaml',
      ...seed,
      '--istio-version',
      '1.20',
    ]);
    await check('trace after json', ['trace', 'platform.yaml', ...seed, '-o', 'json']);
    await check('trace ambient', ['trace', 'ambient.yaml', ...seed]);
    await check('trace external', [
      'trace',
      'platform.yaml',
      '--from',
      'external',
      '--url',
      'http://sklearn-iris.kubeflow-user-example-com.example.com/v1/models/sklearn-iris:predict',
      '--all-paths',
    ]);
    await check('trace waypoint', [
      'trace',
      'examples/ambient-waypoint.yaml',
      '--from',
      'team-a/client-0',
      '--url',
      'http://iris.models/v1/models/iris:predict',
      '--method',
      'POST',
    ]);
    await check('verify cases', [
      'verify',
      'ambient.yaml',
      '--cases',
      'examples/ambient-cases.yaml',
      '-o',
      'json',
    ]);
    await check(
      'migrate plan',
      ['migrate', 'platform.yaml', '--to', 'ambient', '--plan', 'plan'],
      ['plan/plan.md', 'plan/plan.json'],
    );
    await check('verify equivalence', ['verify', '--equivalence', 'platform.yaml', 'migrated.yaml']);
    await check('verify equivalence json', [
      'verify',
      '--equivalence',
      'platform.yaml',
      'migrated.yaml',
      '-o',
      'json',
    ]);
    await check('bad input', ['render', 'examples']);
  });
});

describe('byte-identical outputs: the conformance cases', () => {
  test('each case, as its runner calls kfmesh', async () => {
    // The project's own copies only: cases in ../shared that this project has not seen have no digest.
    for (const c of discoverCases()) {
      if (!c.label.startsWith('project:')) continue;
      const kind = c.body['kind'];
      if (kind !== 'RenderCase' && kind !== 'TraceCase') continue;
      const input = `case-${sha(c.path)}.yaml`;
      writeFileSync(input, ((c.body['input'] ?? []) as unknown[]).map((o) => stringify(o)).join('---\n'));
      const args = ((c.body['args'] ?? []) as unknown[]).map(String);
      const command = kind === 'RenderCase' ? 'render' : 'trace';
      await check(`case ${c.label}`, [command, input, '-o', 'json', ...args]);
      await check(`case ${c.label} text`, [command, input, ...args]);
    }
  });
});

describe('byte-identical outputs: the real Kubeflow platform', () => {
  test('render, migrate, analyze, verify', async (t) => {
    if (!existsSync(realPlatform)) {
      if (process.env['CI'] === 'true') assert.fail(`${realPlatform} is missing`);
      t.skip(`${realPlatform} is missing (../shared beside the project)`);
      return;
    }
    symlinkSync(realPlatform, 'kubeflow.yaml');
    await check('real render', ['render', 'kubeflow.yaml']);
    await check('real render ambient', ['render', 'kubeflow.yaml', '--mode', 'ambient', '-o', 'json']);
    await check('real analyze', ['analyze', 'kubeflow.yaml', '-o', 'json', '--fail-on', 'never']);
    writeFileSync(
      'kubeflow-ambient.yaml',
      await check(
        'real migrate',
        ['migrate', 'kubeflow.yaml', '--to', 'ambient', '--report', 'real.md'],
        ['real.md'],
      ),
    );
    await check('real analyze migrated', [
      'analyze',
      'kubeflow-ambient.yaml',
      '-o',
      'json',
      '--fail-on',
      'never',
    ]);
    await check('real verify equivalence', [
      'verify',
      '--equivalence',
      'kubeflow.yaml',
      'kubeflow-ambient.yaml',
      '-o',
      'json',
    ]);
    await check(
      'real migrate plan',
      ['migrate', 'kubeflow.yaml', '--to', 'ambient', '--plan', 'real-plan'],
      ['real-plan/plan.md', 'real-plan/plan.json'],
    );
    assert.equal(
      readFileSync('real-plan/plan.md', 'utf8'),
      readFileSync(join(projectRoot, 'docs/example-plan.md'), 'utf8'),
      'docs/example-plan.md is the real platform\'s plan.md: regenerate it (docs/cli.md, "Planning a migration")',
    );
  });
});
