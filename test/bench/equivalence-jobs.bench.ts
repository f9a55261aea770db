/**
 * Equivalence on every core: `kfmesh verify --equivalence` of a 200-Profile Kubeflow platform against its
 * migration to ambient mode, run as users run it, with `--jobs 1` and with `--jobs N` for N up to the
 * cores available; time, the speed-up, and whether the reports are the same bytes. The runs alternate
 * (1, 2, ..., 1, 2, ...) three times and the median of each is shown, as this machine's speed drifts.
 * Both with the symmetry (the default: Profiles alike traced once) and without (`--no-symmetry`: every
 * request shape traced, the work worker threads are for).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { toYaml } from '../../src/load/serialize.ts';
import { printTable } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

const cli = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'kfmesh-jobs-'));
const before = Snapshot.of(kubeflowBenchPlatform(200, 500));
writeFileSync(join(folder, 'before.yaml'), toYaml(before.all()));
writeFileSync(join(folder, 'after.yaml'), toYaml(migrateToAmbient(before).objects));

function verify(jobs: number, symmetry: boolean): { seconds: number; report: string } {
  const start = Date.now();
  const run = spawnSync(
    process.execPath,
    [
      cli,
      'verify',
      '--equivalence',
      'before.yaml',
      'after.yaml',
      '--jobs',
      String(jobs),
      '-o',
      'json',
      ...(symmetry ? [] : ['--no-symmetry']),
    ],
    { cwd: folder, encoding: 'utf8', maxBuffer: 1 << 28 },
  );
  if (run.status !== 0 && run.status !== 1) throw new Error(`verify --jobs ${jobs} failed: ${run.stderr}`);
  return { seconds: (Date.now() - start) / 1000, report: run.stdout };
}

const jobsToTry = Array.from({ length: Math.max(2, availableParallelism()) }, (_, i) => i + 1);
for (const symmetry of [false, true]) {
  const seconds = new Map<number, number[]>();
  const reports = new Map<number, string>();
  for (let repeat = 0; repeat < 3; repeat++)
    for (const jobs of jobsToTry) {
      const run = verify(jobs, symmetry);
      seconds.set(jobs, [...(seconds.get(jobs) ?? []), run.seconds]);
      reports.set(jobs, run.report);
    }
  const median = (jobs: number) => (seconds.get(jobs) ?? []).sort((a, b) => a - b)[1] as number;
  const rows = jobsToTry.map((jobs) => [
    jobs,
    median(jobs),
    median(1) / median(jobs),
    reports.get(jobs) === reports.get(1) ? 'yes' : 'NO',
  ]);
  printTable(
    `verify --equivalence, 200 Profiles, ${availableParallelism()} cores: worker threads, symmetry ${symmetry ? 'on' : 'off'}`,
    ['--jobs', 'median seconds', 'speed-up vs 1', 'same report'],
    rows,
  );
}
rmSync(folder, { recursive: true, force: true });
