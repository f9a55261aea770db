/**
 * Equivalence on the real Kubeflow platform (../shared/real/kubeflow-manifests/platform.yaml, 683 objects
 * with 40 NetworkPolicies) against its migration to ambient mode: one client per class against every
 * client traced (both results compared), and the example platform's check for comparison, from one run;
 * and the probes of what the controllers create next, timed against the check.
 * Skipped with the reason when ../shared is absent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadPaths } from '../../src/load/files.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { checkEquivalence, type EquivalenceResult } from '../../src/verify/equivalence.ts';
import { checkProbes } from '../../src/verify/probes.ts';
import { projectRoot } from '../conformance/cases.ts';
import { peakRssMiB, printTable, timed } from './harness.ts';

const platform = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');

function check(before: Snapshot, after: Snapshot, exhaustive: boolean) {
  return timed(() => checkEquivalence(before, after, { exhaustive }));
}

const same = (a: EquivalenceResult, b: EquivalenceResult) =>
  JSON.stringify([
    a.requests,
    a.unchanged,
    a.errors,
    a.warnings,
    a.notes,
    a.groups.map((g) => [g.cause, g.count]),
  ]) ===
  JSON.stringify([
    b.requests,
    b.unchanged,
    b.errors,
    b.warnings,
    b.notes,
    b.groups.map((g) => [g.cause, g.count]),
  ]);

if (!existsSync(platform)) {
  console.log(`skipped: ${platform} is missing (../shared beside the project)`);
} else {
  const real = new Snapshot(await loadPaths([platform]));
  const realAfter = Snapshot.of(migrateToAmbient(real).objects);
  const example = Snapshot.of(examplePlatform());
  const exampleAfter = Snapshot.of(migrateToAmbient(example).objects);
  const rows: (string | number)[][] = [];
  const probeRows: (string | number)[][] = [];
  for (const [name, before, after] of [
    ['real Kubeflow platform', real, realAfter],
    ['example platform', example, exampleAfter],
  ] as const) {
    const classes = check(before, after, false);
    const every = check(before, after, true);
    const probes = timed(() => checkProbes(before, after));
    probeRows.push([
      name,
      probes.result.probes,
      probes.result.failed,
      probes.ms,
      classes.ms,
      ((classes.ms + probes.ms) / classes.ms).toFixed(2),
    ]);
    for (const [mode, run] of [
      ['one client per class', classes],
      ['every client', every],
    ] as const)
      rows.push([
        name,
        before.all().length,
        mode,
        run.result.requests,
        run.result.traces,
        run.ms,
        run.result.errors,
        run.result.warnings,
        run === every ? (same(classes.result, every.result) ? 'yes' : 'NO') : '',
      ]);
  }
  printTable(
    'verify --equivalence: a platform and its migration to ambient mode (one run each)',
    ['platform', 'objects', 'mode', 'requests', 'traces', 'check (ms)', 'errors', 'warnings', 'same result'],
    rows,
  );
  printTable(
    'the probes of what the controllers create next, against the check of one client per class (same run)',
    ['platform', 'probes', 'failed', 'probes (ms)', 'check (ms)', 'check with probes / without'],
    probeRows,
  );
  console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);
}
