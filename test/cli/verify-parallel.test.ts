/**
 * `kfmesh verify --equivalence` spread out, through the real program: worker threads (`--jobs N`) and
 * slices on separate processes (`--shard I/N`, then `--merge`) give the same report, byte for byte, as
 * the plain run; parts that do not make a whole are refused (exit 2, nothing printed to stdout).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { runKfmesh, writeText } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { stamped } from '../symmetry-fixtures.ts';

const before = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const folder = dirname(before);
const after = join(folder, 'ambient.yaml');
writeFileSync(after, runKfmesh(['migrate', before, '--to', 'ambient']).stdout);
// A change that opens access, so the report has errors and examples of every severity.
const opened = join(folder, 'opened.yaml');
writeFileSync(
  opened,
  `${readFileSync(after, 'utf8')}---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata:\n  name: allow-all\n  namespace: kubeflow\nspec:\n  rules:\n  - {}\n`,
);

const verify = (...args: string[]) => runKfmesh(['verify', '--equivalence', before, ...args]);

/** Writes the N parts of a check into a fresh folder, each from its own process; returns the folder. */
function shards(afterFile: string, count: number, name: string): string {
  const parts = join(folder, name);
  mkdirSync(parts);
  for (let index = 0; index < count; index++) {
    const part = join(parts, `part-${index}.json`);
    const run = runKfmesh([
      'verify',
      '--equivalence',
      before,
      afterFile,
      '--shard',
      `${index}/${count}`,
      '--part',
      part,
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '');
  }
  return parts;
}

describe('verify --equivalence across threads and processes', () => {
  for (const [label, afterFile] of [
    ['the migration', after],
    ['a change that opens access', opened],
  ] as const) {
    test(`${label}: --jobs 1, 2 and 3 and --shard/--merge give the same bytes`, () => {
      const plain = verify(afterFile, '--jobs', '1', '-o', 'json');
      assert.ok(plain.code === 0 || plain.code === 1, plain.stderr);
      const report = JSON.parse(plain.stdout) as { errors: number; requests: number };
      assert.ok(report.requests > 1000);
      if (afterFile === opened) assert.ok(report.errors > 0, 'the opened policy is found');
      for (const jobs of ['2', '3']) {
        const run = verify(afterFile, '--jobs', jobs, '-o', 'json');
        assert.equal(run.code, plain.code, run.stderr);
        assert.equal(run.stdout, plain.stdout, `--jobs ${jobs}`);
      }
      for (const count of [1, 3]) {
        const parts = shards(afterFile, count, `${label.replaceAll(' ', '-')}-${count}`);
        const merged = runKfmesh(['verify', '--merge', parts, '-o', 'json']);
        assert.equal(merged.code, plain.code, merged.stderr);
        assert.equal(merged.stdout, plain.stdout, `${count} shards`);
      }
      const text = verify(afterFile, '--jobs', '1');
      const parts = join(folder, `${label.replaceAll(' ', '-')}-3`);
      const files = [0, 1, 2].map((i) => join(parts, `part-${i}.json`)).reverse();
      assert.equal(
        runKfmesh(['verify', '--merge', ...files]).stdout,
        text.stdout,
        'text, parts in any order',
      );
    });
  }

  test('parts that do not make one whole are refused with the reason', () => {
    const three = join(folder, 'the-migration-3');
    const part = (i: number) => join(three, `part-${i}.json`);
    const refused = (args: string[], reason: RegExp) => {
      const run = runKfmesh(['verify', ...args]);
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, reason);
    };
    refused(['--merge', part(0), part(2)], /missing slice\(s\) 1\/3/);
    refused(['--merge', part(0), part(0), part(1), part(2)], /both slice 0\/3/);
    const other = join(folder, 'a-change-that-opens-access-3', 'part-1.json');
    refused(['--merge', part(0), other, part(2)], /made from other configurations/);
    refused(['--merge', before], /not a part of kfmesh verify --shard/);
    refused(['--merge', join(folder, 'nothing-here')], /no such file or folder/);
    refused(['--merge', three, '--exhaustive'], /--merge takes only the parts/);
    const exhaustive = join(folder, 'exhaustive-part.json');
    assert.equal(
      runKfmesh([
        'verify',
        '--equivalence',
        before,
        after,
        '--shard',
        '1/3',
        '--part',
        exhaustive,
        '--exhaustive',
      ]).code,
      0,
    );
    refused(['--merge', part(0), exhaustive, part(2)], /made from other configurations/);
    refused(['--equivalence', before, after, '--shard', '3/3'], /--shard 3\/3: expected I\/N/);
    refused(['--equivalence', before, after, '--jobs', '0'], /--jobs 0: expected a whole number/);
    refused(['--equivalence', before, after, '--shard', '0/2', '--jobs', '2'], /give --jobs or --shard/);
    refused(['--equivalence', before, after, '--part', join(folder, 'p.json')], /--part is where --shard/);
  });
});

interface Container {
  args: string[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  volumeMounts: { name: string; mountPath: string }[];
}
interface JobObject {
  kind: string;
  metadata: { name: string };
  spec: {
    completionMode?: string;
    completions?: number;
    parallelism?: number;
    template: {
      spec: {
        containers: Container[];
        volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[];
      };
    };
  };
}

describe('deploy/verify-job.yaml', () => {
  const objects = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/verify-job.yaml'), 'utf8')).map(
    (d) => d.toJS() as JobObject,
  );
  const job = (name: string) => {
    const found = objects.find((o) => o.kind === 'Job' && o.metadata.name === name);
    assert.ok(found, `Job ${name}`);
    return found;
  };

  test('is valid against the Kubernetes schemas of Job and PersistentVolumeClaim', () => {
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata.name}`),
      ['PersistentVolumeClaim/kfmesh-verify-parts', 'Job/kfmesh-verify-shards', 'Job/kfmesh-verify-merge'],
    );
    for (const o of objects) {
      const model = o.kind === 'Job' ? new Job(o as never) : new PersistentVolumeClaim(o as never);
      assert.doesNotThrow(() => model.validate(), `${o.kind}/${o.metadata.name}`);
    }
    // The schema is what catches a wrong type here (the pin that validation runs).
    const broken = structuredClone(job('kfmesh-verify-shards'));
    (broken.spec as Record<string, unknown>)['completions'] = 'four';
    assert.throws(() => new Job(broken as never).validate(), /completions must be integer/);
  });

  test('its shards and merge, run here as the Job runs them, give the plain report', () => {
    const shardJob = job('kfmesh-verify-shards');
    const [shard] = shardJob.spec.template.spec.containers;
    const [merge] = job('kfmesh-verify-merge').spec.template.spec.containers;
    assert.ok(shard && merge);
    assert.equal(shardJob.spec.completionMode, 'Indexed');
    const count = Number(
      /^\$\(SHARD\)\/(\d+)$/.exec(shard.args[shard.args.indexOf('--shard') + 1] ?? '')?.[1],
    );
    assert.ok(count > 1, 'the shards say how many slices there are');
    assert.equal(shardJob.spec.completions, count);
    assert.equal(shardJob.spec.parallelism, count);
    const index = shard.env?.find((e) => e.name === 'SHARD')?.valueFrom?.fieldRef?.fieldPath;
    assert.equal(index, "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    // Both Jobs mount the same claim where the shards write and the merge reads.
    const claim = (container: Container, spec: JobObject['spec']['template']['spec'], path: string) => {
      const mount = container.volumeMounts.find((m) => path.startsWith(m.mountPath));
      return spec.volumes.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName;
    };
    const partArg = shard.args[shard.args.indexOf('--part') + 1] ?? '';
    const mergeArg = merge.args[merge.args.indexOf('--merge') + 1] ?? '';
    assert.equal(
      claim(shard, shardJob.spec.template.spec, partArg),
      claim(merge, job('kfmesh-verify-merge').spec.template.spec, mergeArg),
    );
    // Here: /inputs holds BEFORE and AFTER, /parts is a fresh folder.
    const here = mkdtempSync(join(tmpdir(), 'kfmesh-job-'));
    mkdirSync(join(here, 'inputs'));
    mkdirSync(join(here, 'parts'));
    writeFileSync(join(here, 'inputs/before.yaml'), readFileSync(before));
    writeFileSync(join(here, 'inputs/after.yaml'), readFileSync(opened));
    const local = (arg: string) => arg.replace(/^\/(inputs|parts)/, `${here}/$1`);
    for (let i = 0; i < count; i++) {
      const run = runKfmesh(shard.args.map((a) => local(a.replaceAll('$(SHARD)', String(i)))));
      assert.equal(run.code, 0, run.stderr);
    }
    const merged = runKfmesh(merge.args.map(local));
    const plain = verify(opened, '--jobs', '1');
    assert.equal(merged.code, 1, 'the opened policy fails the merge Job (exit 1)');
    assert.equal(merged.stdout, plain.stdout);
  });
});

describe('verify --equivalence with namespaces alike up to renaming, across threads and processes', () => {
  const profiles = stamped(5);
  const stampedBefore = writeText(profiles.map((o) => JSON.stringify(o)).join('\n---\n'), 'profiles.yaml');
  const stampedAfter = join(dirname(stampedBefore), 'profiles-ambient.yaml');
  writeFileSync(stampedAfter, runKfmesh(['migrate', stampedBefore, '--to', 'ambient']).stdout);
  const run = (...args: string[]) => {
    const out = runKfmesh(['verify', '--equivalence', stampedBefore, stampedAfter, ...args]);
    assert.equal(out.code, 0, out.stderr);
    return out.stdout;
  };

  test('--jobs 1 and 2 and --shard/--merge: the same bytes; --no-symmetry: the same report, more traces', () => {
    const plain = run('--jobs', '1', '-o', 'json');
    assert.equal(run('--jobs', '2', '-o', 'json'), plain);
    const parts = join(dirname(stampedBefore), 'profile-parts');
    mkdirSync(parts);
    for (let index = 0; index < 3; index++)
      run('--shard', `${index}/3`, '--part', join(parts, `${index}.json`));
    const merged = runKfmesh(['verify', '--merge', parts, '-o', 'json']);
    assert.equal(merged.stdout, plain, merged.stderr);
    const off = JSON.parse(run('--jobs', '1', '-o', 'json', '--no-symmetry')) as { traces: number };
    const on = JSON.parse(plain) as { traces: number };
    assert.ok(on.traces * 2 < off.traces, `${on.traces} traces with the symmetry, ${off.traces} without`);
    assert.equal(JSON.stringify({ ...on, traces: 0 }), JSON.stringify({ ...off, traces: 0 }));
    assert.match(run('--jobs', '1'), /namespaces alike up to renaming/);
    assert.doesNotMatch(run('--jobs', '1', '--no-symmetry'), /namespaces alike up to renaming/);
  });
});
