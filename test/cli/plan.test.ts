/** `kfmesh migrate --to ambient --plan DIR` through the real program: the files, their determinism, bad input. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { runKfmesh, writeText } from '../cli-process.ts';

const example = writeText(runKfmesh(['example']).stdout, 'plan-platform.yaml');
const fresh = () => join(mkdtempSync(join(tmpdir(), 'kfmesh-plan-')), 'plan');

interface PlanJson {
  groups: string[][];
  errors: number;
  windows: unknown[];
  steps: {
    id: string;
    stage: string;
    namespaces: string[];
    operations: { op: string }[];
    simulated: { errors: number };
  }[];
}

describe('kfmesh migrate --to ambient --plan DIR', () => {
  const dir = fresh();
  const run = runKfmesh(['migrate', example, '--to', 'ambient', '--plan', dir]);

  test('writes plan.md, plan.json and a file per step to apply and to delete; says how it went on stderr', () => {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /kfmesh: simulating the state after step 1 of \d+/);
    assert.match(
      run.stderr,
      /planned \d+ steps in .*: every state simulated: 0 errors, 0 broken flows, 0 requests in outage windows/,
    );
    const files = readdirSync(dir).sort();
    assert.ok(files.includes('plan.md') && files.includes('plan.json'));
    assert.ok(files.some((f) => /^\d\d-gateways\.yaml$/.test(f)));
    assert.ok(files.some((f) => /-cleanup\.delete\.yaml$/.test(f)));
    const plan = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8')) as PlanJson;
    assert.equal(plan.errors, 0);
    assert.deepEqual(plan.groups, [['kubeflow', 'ml-research']]);
    assert.equal(plan.steps[0]?.stage, 'prerequisites');
    assert.ok(plan.steps.every((s) => s.simulated.errors === 0));
    // Every YAML file holds objects kubectl takes: apiVersion, kind, a name.
    for (const f of files.filter((name) => name.endsWith('.yaml')))
      for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
        const o = doc.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string } };
        assert.ok(o.apiVersion && o.kind && o.metadata?.name, `${f}: ${JSON.stringify(o)}`);
      }
    const md = readFileSync(join(dir, 'plan.md'), 'utf8');
    assert.match(md, /^# Migration plan to ambient mode/);
    assert.match(md, /\*\*0 errors\*\*/);
    assert.match(md, /kubectl apply --server-side --field-manager=kfmesh-migration -f \d\d-gateways\.yaml/);
    assert.match(md, /kubectl label --overwrite namespace kubeflow istio-injection-/);
    assert.match(md, /kubectl -n kubeflow rollout restart deployment\/ml-pipeline/);
    assert.match(md, /they move together/);
    assert.match(md, /Not in the input: DaemonSet ztunnel, DaemonSet istio-cni-node/);
  });

  test('the same input gives byte-identical files', () => {
    const again = fresh();
    assert.equal(runKfmesh(['migrate', example, '--to', 'ambient', '--plan', again]).code, 0);
    const files = readdirSync(dir).sort();
    assert.deepEqual(readdirSync(again).sort(), files);
    for (const f of files)
      assert.equal(readFileSync(join(again, f), 'utf8'), readFileSync(join(dir, f), 'utf8'), f);
  });

  test('--namespace plans only the named namespace: no step moves another one', () => {
    const one = fresh();
    const only = runKfmesh([
      'migrate',
      example,
      '--to',
      'ambient',
      '--plan',
      one,
      '--namespace',
      'ml-research',
    ]);
    assert.equal(only.code, 0, only.stderr);
    const plan = JSON.parse(readFileSync(join(one, 'plan.json'), 'utf8')) as PlanJson;
    assert.deepEqual(plan.groups, [['ml-research']]);
    assert.ok(plan.steps.every((s) => s.namespaces.every((ns) => ns === 'ml-research')));
    assert.doesNotMatch(readFileSync(join(one, 'plan.md'), 'utf8'), /namespace kubeflow /);
  });
});

describe('kfmesh migrate --plan: bad input exits 2 and writes nothing', () => {
  const bad = (args: string[], message: RegExp) => {
    const run = runKfmesh(['migrate', example, '--to', 'ambient', ...args]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, message);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
    assert.equal(run.stdout, '');
  };

  test('an unknown --namespace', () => {
    const dir = fresh();
    bad(['--plan', dir, '--namespace', 'nope'], /--namespace nope: no such Namespace in the input/);
    assert.equal(existsSync(dir), false);
  });

  test('a namespace the migration does not move', () => {
    const dir = fresh();
    bad(['--plan', dir, '--namespace', 'ml-team'], /--namespace ml-team: the migration does not move it/);
    assert.equal(existsSync(dir), false);
  });

  test('a DIR that exists and is not empty, or is a file', () => {
    const dir = fresh();
    mkdirSync(dir);
    writeFileSync(join(dir, 'mine.txt'), 'keep me');
    bad(['--plan', dir], /--plan .*: exists and is not empty/);
    assert.deepEqual(readdirSync(dir), ['mine.txt']);
    bad(['--plan', join(dir, 'mine.txt')], /exists and is not a folder/);
    assert.equal(readFileSync(join(dir, 'mine.txt'), 'utf8'), 'keep me');
  });

  test('--namespace without --plan, and --plan with --report', () => {
    bad(['--namespace', 'kubeflow'], /--namespace plans one namespace at a time: give --plan DIR too/);
    bad(['--plan', fresh(), '--report', 'r.md'], /--plan writes its own report/);
  });
});
