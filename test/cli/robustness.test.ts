/**
 * The command line under hostile or unusual input and output: an alias bomb, a report written over a
 * special file or a symbolic link, a reader that goes away, a full disk, nameless Profiles, empty case
 * lists, cases on standard input, and symbolic links in folders (followed, loops and dangling links
 * reported). Each is an error with its reason (exit 2) or a clean result, never a stack trace.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { kfmeshBin, runKfmesh, writeManifest, writeText } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at |internal error/);

/** A document whose aliases expand to 10^9 nodes ("billion laughs"). */
const aliasBomb = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
  'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
  'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
  'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
  'f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]',
  'g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]',
  'h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]',
  'i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]',
].join('\n');

describe('kfmesh with hostile input', () => {
  const bomb = writeText(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n${aliasBomb}\n`, 'bomb.yaml');

  for (const args of [
    ['render', bomb],
    ['analyze', bomb],
    ['migrate', '--to', 'ambient', bomb],
    ['trace', bomb, '--from', 'external', '--url', 'http://x/'],
    ['verify', bomb, '--cases', join(projectRoot, 'examples/ambient-cases.yaml')],
    ['verify', '--equivalence', bomb, bomb],
  ])
    test(`an alias bomb: ${args[0]} exits 2 naming the file and line`, () => {
      const run = runKfmesh(args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /bomb\.yaml:1:1: .*cannot read: .*alias/i);
      noStack(run.stderr);
    });

  test('an alias bomb as a case file: exit 2 naming the file', () => {
    const cases = writeText(`${aliasBomb}\ncases: [*i, *i]\n`, 'cases.yaml');
    const run = runKfmesh(['verify', '--cases', cases]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /cases\.yaml:1:1: cannot read: .*alias/i);
    noStack(run.stderr);
  });

  test('an object without a name is bad input at its metadata (exit 2); a Profile named unlike a namespace is an object error', () => {
    for (const [kind, line] of [
      ['Profile', 3],
      ['Notebook', 3],
    ] as const) {
      const nameless = writeText(
        [`apiVersion: kubeflow.org/v1`, `kind: ${kind}`, 'metadata: {namespace: team}', 'spec: {}'].join(
          '\n',
        ),
      );
      const run = runKfmesh(['render', nameless]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(
        run.stderr,
        new RegExp(`input\\.yaml:${line}:\\d+: ${kind} team/: metadata: the object has no metadata\\.name`),
      );
      noStack(run.stderr);
    }
    const file = writeText(
      [
        'apiVersion: kubeflow.org/v1',
        'kind: Profile',
        'metadata: {name: Not_A_Namespace}',
        'spec: {owner: {kind: User, name: a@example.com}}',
      ].join('\n'),
    );
    const run = runKfmesh(['render', file]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /input\.yaml:3:\d+: Profile Not_A_Namespace: metadata\.name: "Not_A_Namespace" is not a valid namespace name/,
    );
    assert.doesNotMatch(run.stdout, /name: ""/);
  });
});

describe('kfmesh verify --cases', () => {
  const example = writeText(runKfmesh(['example']).stdout, 'example.yaml');

  test('an empty list of cases is an error', () => {
    for (const text of ['[]\n', 'cases: []\n']) {
      const run = runKfmesh(['verify', example, '--cases', writeText(text, 'cases.yaml')]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /cases\.yaml:1:\d+: (cases: )?no cases: give at least one/);
    }
  });

  test('--cases - reads the cases from standard input', () => {
    const cases = [
      '- name: external to the model',
      '  request: {from: external, url: "http://sklearn-iris.kubeflow-user-example-com.example.com/v1/models/sklearn-iris"}',
      '  expect: {code: 200}',
    ].join('\n');
    const run = runKfmesh(['verify', example, '--cases', '-'], cases);
    assert.match(run.stdout, /external to the model/);
    assert.ok(run.code === 0 || run.code === 1, run.stderr);
    const both = runKfmesh(['verify', '-', '--cases', '-'], cases);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--cases - reads standard input/);
  });
});

describe('kfmesh output', () => {
  test('--report over a symbolic link writes through it; the link stays a link', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kfmesh-report-'));
    const target = join(dir, 'target.md');
    writeFileSync(target, 'old\n');
    const link = join(dir, 'report.md');
    symlinkSync(target, link);
    const run = runKfmesh(['migrate', '--to', 'ambient', '--report', link]);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.match(readFileSync(target, 'utf8'), /# /);
    assert.deepEqual(readdirSync(dir).sort(), ['report.md', 'target.md']);
  });

  test('--report to a special file (/dev/stdout, /dev/null) writes to it, not over it', () => {
    const run = spawnSync(
      process.execPath,
      [kfmeshBin, 'migrate', '--to', 'ambient', '--report', '/dev/null'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.ok(lstatSync('/dev/null').isCharacterDevice());
  });

  test('--report that cannot be written: exit 2 with the reason, no temporary file left', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kfmesh-report-'));
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const run = runKfmesh(['migrate', '--to', 'ambient', '--report', join(dir, 'missing', 'report.md')]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--report .*report\.md: ENOENT/);
    const intoFolder = runKfmesh(['migrate', '--to', 'ambient', '--report', folder]);
    assert.equal(intoFolder.code, 2);
    assert.deepEqual(readdirSync(dir), ['a-folder']);
    assert.deepEqual(readdirSync(folder), []);
    noStack(run.stderr + intoFolder.stderr);
  });

  test('a reader that goes away (| head -1): exit 141, nothing on standard error', () => {
    // Far more output than a pipe holds, so the writer is still writing when the reader leaves.
    const models = Array.from({ length: 1500 }, (_, i) => ({
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: { name: `model-${i}`, namespace: 'team' },
      spec: { predictor: { model: { modelFormat: { name: 'sklearn' } } } },
      status: {
        url: `http://model-${i}.team.example.com`,
        conditions: [
          { type: 'PredictorReady', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
        components: { predictor: { url: `http://model-${i}-predictor.team.example.com` } },
      },
    }));
    const input = writeManifest(models);
    const run = spawnSync(
      'bash',
      ['-c', `set -o pipefail; "${process.execPath}" "${kfmeshBin}" render "${input}" | head -1`],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(run.stdout, 'apiVersion: v1\n');
    assert.equal(run.status, 141);
    assert.equal(run.stderr, '');
  });

  test(
    'a full disk (/dev/full): exit 2 with the reason',
    { skip: !existsSync('/dev/full') && 'no /dev/full' },
    () => {
      const run = spawnSync('bash', ['-c', `"${process.execPath}" "${kfmeshBin}" render > /dev/full`], {
        encoding: 'utf8',
      });
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, /kfmesh: cannot write the output: .*ENOSPC/);
      noStack(run.stderr);
    },
  );
});

describe('kfmesh reading folders with symbolic links', () => {
  const example = runKfmesh(['example']).stdout;

  test('a linked folder is followed; a loop and a dangling link are errors naming them', () => {
    const root = mkdtempSync(join(tmpdir(), 'kfmesh-links-'));
    const real = join(root, 'real');
    mkdirSync(real);
    writeFileSync(join(real, 'platform.yaml'), example);
    const top = join(root, 'top');
    mkdirSync(top);
    symlinkSync(real, join(top, 'linked'));
    const direct = runKfmesh(['render', real]);
    const linked = runKfmesh(['render', top]);
    assert.equal(linked.code, direct.code);
    assert.equal(linked.stdout, direct.stdout);
    assert.ok(linked.stdout.length > 0);

    symlinkSync(top, join(real, 'back-to-top'));
    const loop = runKfmesh(['render', top]);
    assert.equal(loop.code, 2);
    assert.match(loop.stderr, /back-to-top: a symbolic link loop/);

    const dangling = mkdtempSync(join(tmpdir(), 'kfmesh-links-'));
    symlinkSync(join(dangling, 'nowhere.yaml'), join(dangling, 'broken.yaml'));
    const broken = runKfmesh(['render', dangling]);
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /broken\.yaml: a symbolic link to nothing/);
    noStack(loop.stderr + broken.stderr);
  });
});
