/**
 * Equivalence benchmark: a Kubeflow platform in sidecar mode (the example's components, gateways and
 * edge policies, with P Profile namespaces and 2.5 InferenceServices per Profile) against its migration to
 * ambient mode. Reports, from one run: one client per class against every client traced (at a small size,
 * where tracing every client is affordable, with both results compared), and the check at 200 and 2,000
 * namespaces, with and without the symmetry (namespaces alike up to renaming traced once): requests
 * compared, traces made, time, peak memory, growth, and whether both give the same report.
 */
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { checkEquivalence, type EquivalenceResult } from '../../src/verify/equivalence.ts';
import { peakRssMiB, printTable, timed } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

function platforms(profiles: number): [Snapshot, Snapshot] {
  const before = Snapshot.of(kubeflowBenchPlatform(profiles, Math.round(profiles * 2.5)));
  return [before, Snapshot.of(migrateToAmbient(before).objects)];
}

function check(before: Snapshot, after: Snapshot, exhaustive: boolean, symmetry = true) {
  return timed(() => checkEquivalence(before, after, { exhaustive, symmetry }));
}

const counts = (r: EquivalenceResult) =>
  JSON.stringify([
    r.requests,
    r.unchanged,
    r.errors,
    r.warnings,
    r.notes,
    r.groups.map((g) => [g.cause, g.count]),
  ]);

const [smallBefore, smallAfter] = platforms(20);
const classes = check(smallBefore, smallAfter, false);
const every = check(smallBefore, smallAfter, true);
printTable(
  'verify --equivalence, 20 Profile namespaces: one client per class vs every client traced',
  ['mode', 'requests', 'traces', 'ms', 'same result'],
  [
    ['one client per class', classes.result.requests, classes.result.traces, classes.ms, ''],
    [
      'every client',
      every.result.requests,
      every.result.traces,
      every.ms,
      counts(classes.result) === counts(every.result) ? 'yes' : 'NO',
    ],
  ],
);

const rows: (string | number)[][] = [];
const sizes = [200, 2_000];
const runs = sizes.map((profiles) => {
  const [before, after] = platforms(profiles);
  const on = check(before, after, false);
  const off = check(before, after, false, false);
  for (const [mode, run] of [
    ['on', on],
    ['off', off],
  ] as const)
    rows.push([
      profiles,
      mode,
      before.all().length,
      run.result.requests,
      run.result.traces,
      run.ms,
      run.result.errors,
      run.result.warnings,
      run.result.notes,
    ]);
  const same = JSON.stringify({ ...on.result, traces: 0 }) === JSON.stringify({ ...off.result, traces: 0 });
  console.log(
    `${profiles} Profiles: symmetry off / on ${(off.ms / on.ms).toFixed(1)}x time, ${(off.result.traces / on.result.traces).toFixed(0)}x traces; same report: ${same ? 'yes' : 'NO'}`,
  );
  return { on, off };
});
printTable(
  'verify --equivalence: a Kubeflow platform and its migration to ambient mode (one run each)',
  ['Profiles', 'symmetry', 'objects', 'requests', 'traces', 'check (ms)', 'errors', 'warnings', 'notes'],
  rows,
);
const [small, large] = runs as [(typeof runs)[number], (typeof runs)[number]];
console.log(
  `\n2,000 vs 200 namespaces (symmetry off): requests ${(large.off.result.requests / small.off.result.requests).toFixed(1)}x, traces ${(large.off.result.traces / small.off.result.traces).toFixed(1)}x, time ${(large.off.ms / small.off.ms).toFixed(1)}x`,
);
console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);
