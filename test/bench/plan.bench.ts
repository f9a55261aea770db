/**
 * The migration plan (`migrate --plan`) on the example and the real Kubeflow platform, from one run: the
 * plan with its order chosen (each namespace traced alone), then every state and undo checked, each timed
 * against one equivalence check of the platform and its migration (the unit a plan's check is made of).
 * The real platform is skipped with the reason when ../shared is absent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadPaths } from '../../src/load/files.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { checkEquivalence } from '../../src/verify/equivalence.ts';
import { planMigration } from '../../src/plan/order.ts';
import { checkPlan } from '../../src/plan/simulate.ts';
import { projectRoot } from '../conformance/cases.ts';
import { peakRssMiB, printTable, timed } from './harness.ts';

const real = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');
const platforms: [string, Snapshot][] = [['example platform', Snapshot.of(examplePlatform())]];
if (existsSync(real)) platforms.push(['real Kubeflow platform', new Snapshot(await loadPaths([real]))]);
else console.log(`the real platform is skipped: ${real} is missing (../shared beside the project)`);

const rows: (string | number)[][] = [];
for (const [name, snapshot] of platforms) {
  const one = timed(() => checkEquivalence(snapshot, Snapshot.of(migrateToAmbient(snapshot).objects)));
  const plan = timed(() => planMigration(snapshot));
  const check = timed(() => checkPlan(plan.result));
  rows.push([
    name,
    snapshot.all().length,
    plan.result.steps.length,
    plan.result.groups.map((g) => g.join('+')).join(', '),
    plan.ms,
    check.ms,
    one.ms,
    ((plan.ms + check.ms) / one.ms).toFixed(1),
    check.result.errors,
    check.result.windows.reduce((n, w) => n + w.count, 0),
  ]);
}
printTable(
  'migrate --plan: planning (order chosen by tracing) and checking every state and undo, against one equivalence check (one run)',
  [
    'platform',
    'objects',
    'steps',
    'order',
    'plan (ms)',
    'check (ms)',
    'one check (ms)',
    'plan + check / one check',
    'errors',
    'in windows',
  ],
  rows,
);
console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);
