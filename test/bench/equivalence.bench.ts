/**
 * Equivalence benchmark: a Kubeflow platform in sidecar mode (the example's components, gateways and
 * edge policies, with P Profile namespaces and 2.5 InferenceServices per Profile) against its migration to
 * ambient mode. Reports, from one run: one client per class against every client traced (at a small size,
 * where tracing every client is affordable, with both results compared), and the check at 200 and 2,000
 * namespaces: requests compared, traces made, time, peak memory, growth.
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

function check(before: Snapshot, after: Snapshot, exhaustive: boolean) {
  return timed(() => checkEquivalence(before, after, { exhaustive }));
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
  const run = check(before, after, false);
  rows.push([
    profiles,
    before.all().length,
    run.result.requests,
    run.result.traces,
    run.ms,
    run.result.errors,
    run.result.warnings,
    run.result.notes,
  ]);
  return run;
});
printTable(
  'verify --equivalence: a Kubeflow platform and its migration to ambient mode (one run each)',
  ['Profiles', 'objects', 'requests', 'traces', 'check (ms)', 'errors', 'warnings', 'notes'],
  rows,
);
const [small, large] = runs as [ReturnType<typeof check>, ReturnType<typeof check>];
console.log(
  `\n2,000 vs 200 namespaces: requests ${(large.result.requests / small.result.requests).toFixed(1)}x, traces ${(large.result.traces / small.result.traces).toFixed(1)}x, time ${(large.ms / small.ms).toFixed(1)}x`,
);
console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);
