/**
 * Every command's output, byte for byte, on the example platform, the conformance cases and the real
 * Kubeflow platform, kept as text a reviewer reads in a diff: `test/golden/testdata/<run>/` holds the
 * exit code, standard output, standard error and the files the run wrote. A refactoring must leave
 * every file as it was; a change of behaviour is recorded on purpose with `npm run golden` (which
 * rewrites the folder, stale runs removed) and its diff goes into the commit that makes it.
 *
 * The commands run in this process through `main` (the same code path as the `kfmesh` binary, without
 * a Node start per run), in a scratch folder so that paths printed in outputs are the same every run.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { main } from '../../src/cli/main.ts';
import { discoverCases, projectRoot } from '../conformance/cases.ts';

const goldenDir = join(projectRoot, 'test/golden/testdata');
const realPlatform = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');
const update = process.env['KFMESH_UPDATE_GOLDEN'] === '1';

/** What a run gave: its exit code, what it printed, and the files it wrote (path → text). */
interface Output {
  code: number;
  stdout: string;
  stderr: string;
  files: Record<string, string>;
}

/** A run's folder name: its name in lower case, words joined by `-`. */
const slug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, '-')
    .replace(/^-|-$/g, '');

/**
 * The output as stored: each CustomResourceDefinition document (11 MB of the real platform, which no
 * command changes) becomes one line with its name and digest, so a changed one still shows.
 */
function condensed(text: string): string {
  return text
    .split(/(?<=\n)---\n/)
    .map((doc) => {
      if (
        !/^kind: CustomResourceDefinition$/m.test(doc) ||
        !/^apiVersion: apiextensions\.k8s\.io\//m.test(doc)
      )
        return doc;
      const name = /^metadata:\n(?: {2}.*\n)*? {2}name: (\S+)/m.exec(doc)?.[1] ?? '?';
      return `# CustomResourceDefinition ${name}: ${doc.length} bytes, sha256 ${sha(doc)}\n`;
    })
    .join('---\n');
}

/** The files of a run as stored: `exit-code`, `stdout`, `stderr` (when not empty), `files/<path>`. */
function stored(output: Output): Map<string, string> {
  const out = new Map<string, string>([
    ['exit-code', `${output.code}\n`],
    ['stdout', condensed(output.stdout)],
  ]);
  if (output.stderr) out.set('stderr', output.stderr);
  for (const [path, text] of Object.entries(output.files)) out.set(join('files', path), text);
  return out;
}

function readStored(dir: string, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(prefix, entry.name);
    if (entry.isDirectory()) for (const [k, v] of readStored(join(dir, entry.name), path)) out.set(k, v);
    else out.set(path, readFileSync(join(dir, entry.name), 'utf8'));
  }
  return out;
}

const seen = new Set<string>();

/** A short digest, to name a case's input file after its path. */
const sha = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** Runs `kfmesh ARGS` in the scratch folder; returns what it gave. */
async function run(args: readonly string[], files: readonly string[] = []): Promise<Output> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return {
    code,
    stdout,
    // Progress lines come every 2 s of work, so how many there are depends on the machine.
    stderr: stderr.replace(/^kfmesh: traced \d+ of \d+ requests\n/gm, ''),
    files: Object.fromEntries(files.map((f) => [f, readFileSync(f, 'utf8')])),
  };
}

/** The first line where two texts differ, for a message a reviewer can act on. */
function firstDifference(actual: string, expected: string): string {
  const [a, e] = [actual.split('\n'), expected.split('\n')];
  const i = a.findIndex((line, n) => line !== e[n]);
  const at = i === -1 ? a.length : i;
  return `line ${at + 1}: got ${JSON.stringify(a[at] ?? '<end>')}, golden ${JSON.stringify(e[at] ?? '<end>')}`;
}

/** Runs and compares with (or, when updating, records) the stored output under `name`. */
async function check(name: string, args: readonly string[], files: readonly string[] = []): Promise<string> {
  const output = await run(args, files);
  const dir = join(goldenDir, slug(name));
  assert.ok(!seen.has(dir), `two runs named ${slug(name)}`);
  seen.add(dir);
  const actual = stored(output);
  if (update) {
    rmSync(dir, { recursive: true, force: true });
    for (const [path, text] of actual) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    return output.stdout;
  }
  const golden = readStored(dir);
  assert.ok(golden.size > 0, `no golden output for "${name}" (${dir}); record it with npm run golden`);
  assert.deepEqual(
    [...actual.keys()].sort(),
    [...golden.keys()].sort(),
    `kfmesh ${args.join(' ')}: other outputs`,
  );
  for (const [path, text] of actual)
    if (text !== golden.get(path))
      assert.fail(
        `kfmesh ${args.join(' ')}: ${join(slug(name), path)} changed, ${firstDifference(text, golden.get(path) ?? '')}; if meant, record it with npm run golden and commit the diff`,
      );
  return output.stdout;
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
  // A full update removes the runs no test makes any more.
  if (update && seen.size > 0 && existsSync(realPlatform))
    for (const entry of readdirSync(goldenDir))
      if (!seen.has(join(goldenDir, entry))) rmSync(join(goldenDir, entry), { recursive: true });
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
