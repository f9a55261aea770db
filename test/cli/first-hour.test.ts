/**
 * The first hour with the command, as the README walks it: what a newcomer types wrong, what the project's
 * own examples do, and how much the commands say on standard error.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../conformance/cases.ts';
import { runKfmesh } from '../cli-process.ts';

const url = 'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict';
const from = 'kubeflow-user-example-com/curl-inside-mesh';

describe('flags typed wrong', () => {
  test('a misspelt flag is named with the one meant, before any required flag is missed', () => {
    const run = runKfmesh(['trace', '--form', from, '--url', url]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /unknown option '--form'\n\(Did you mean --from\?\)/);
    assert.doesNotMatch(run.stderr, /required/);
    assert.ok(run.stderr.split('\n').length <= 4, `a few lines, not the whole help:\n${run.stderr}`);
  });

  test('a required flag left out is named', () => {
    const run = runKfmesh(['trace', '--url', url]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--from is required/);
  });

  test('a misspelt command is named with the one meant', () => {
    const run = runKfmesh(['tarce']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /unknown command 'tarce'\n\(Did you mean trace\?\)/);
  });
});

describe("the README's walkthrough", () => {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-first-hour-'));
  const platform = join(dir, 'platform.yaml');
  const before = join(dir, 'before.yaml');
  writeFileSync(platform, runKfmesh(['example']).stdout);
  writeFileSync(before, runKfmesh(['render', platform, '--no-mesh-gateway']).stdout);

  test('the objects before.yaml replaces are one note; -v lists each', () => {
    const args = [
      'trace',
      platform,
      before,
      '--from',
      from,
      '--url',
      url,
      '--method',
      'POST',
      '--istio-version',
      '1.20',
    ];
    const quiet = runKfmesh(args);
    assert.equal(quiet.code, 0, quiet.stderr);
    const notes = quiet.stderr.split('\n').filter((l) => l.startsWith('kfmesh: note:'));
    assert.equal(notes.length, 1, quiet.stderr);
    assert.match(
      notes[0] ?? '',
      /^kfmesh: note: (\d+) objects are given again, the later definition replacing the earlier \(\S*before\.yaml over \S*platform\.yaml: \1\); -v lists them$/,
    );
    const count = Number(/note: (\d+) objects/.exec(notes[0] ?? '')?.[1]);
    for (const verbose of [
      ['-v', ...args],
      [...args, '--verbose'],
    ]) {
      const loud = runKfmesh(verbose);
      assert.equal(loud.code, 0, loud.stderr);
      assert.equal(loud.stdout, quiet.stdout, 'the same answer');
      assert.equal((loud.stderr.match(/ replaces the definition at /g) ?? []).length, count);
    }
  });
});

describe("the project's examples", () => {
  test('analyze examples/ skips the cases file it holds, saying which and why, and analyzes the rest', () => {
    const run = runKfmesh(['analyze', join(projectRoot, 'examples')]);
    assert.ok(run.code === 0 || run.code === 1, run.stderr);
    assert.match(
      run.stderr,
      /note: \S*examples\/ambient-cases\.yaml: skipped: a file of request expectations \(for kfmesh verify --cases\), not Kubernetes objects/,
    );
    assert.match(run.stdout, /KFM425/, "the examples' Envoy-refused regex is a finding, not bad input");
  });

  test('a cases file given to a command that reads manifests is named for what it is', () => {
    const run = runKfmesh(['render', join(projectRoot, 'examples/ambient-cases.yaml')]);
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /ambient-cases\.yaml: a file of request expectations \(for kfmesh verify --cases\)/,
    );
  });

  test('the ambient cases on the sidecar example fail, and the command says the input is not in ambient mode', () => {
    const run = runKfmesh(['verify', '--cases', join(projectRoot, 'examples/ambient-cases.yaml')]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /expect ztunnel or waypoint hops that no request met: is the input in ambient mode\?/,
    );
    const ambient = join(mkdtempSync(join(tmpdir(), 'kfmesh-first-hour-')), 'ambient.yaml');
    writeFileSync(ambient, runKfmesh(['example', '--mode', 'ambient']).stdout);
    const passed = runKfmesh([
      'verify',
      ambient,
      '--cases',
      join(projectRoot, 'examples/ambient-cases.yaml'),
    ]);
    assert.equal(passed.code, 0, passed.stdout);
    assert.doesNotMatch(passed.stderr, /ambient mode\?/);
  });
});
