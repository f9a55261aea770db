/**
 * A benchmark of trust: kfmesh judged by Istio's own code (test/oracle) on ten times the platforms the test
 * suite draws, in seeded batches (KFMESH_BENCH_ORACLE_PLATFORMS, default 2,000; KFMESH_BENCH_ORACLE_SEED),
 * printing what was compared and every disagreement found. Not pass/fail: a disagreement here is a lead.
 */
import { performance } from 'node:perf_hooks';
import { differentialInProcess } from '../oracle/differential.ts';
import { generatedPlatforms } from '../oracle/generate.ts';
import { oracleBinary } from '../oracle/istio-oracle.ts';
import { printTable } from './harness.ts';

const total = Number(process.env['KFMESH_BENCH_ORACLE_PLATFORMS'] ?? 2000);
const firstSeed = Number(process.env['KFMESH_BENCH_ORACLE_SEED'] ?? 1);
const batch = 250;

const binary = oracleBinary();
if (!binary.path) {
  console.log(`oracle bench skipped: ${binary.missing}`);
} else {
  const rows: (string | number)[][] = [];
  const found: string[] = [];
  for (let i = 0; i * batch < total; i++) {
    const seed = firstSeed + i;
    const count = Math.min(batch, total - i * batch);
    const start = performance.now();
    const { requests, objects } = generatedPlatforms(seed, count);
    const report = await differentialInProcess(objects, requests);
    found.push(...report.disagreements.map((d) => `seed ${seed}: ${d}`));
    rows.push([
      seed,
      count,
      requests.length,
      report.compared,
      report.ztunnel,
      report.waypoint,
      report.disagreements.length,
      (performance.now() - start) / 1000,
    ]);
  }
  const sum = (k: number) => rows.reduce((s, r) => s + (r[k] as number), 0);
  rows.push(['all', sum(1), sum(2), sum(3), sum(4), sum(5), sum(6), sum(7)]);
  printTable(
    "kfmesh judged by Istio's own code on generated platforms",
    [
      'seed',
      'platforms',
      'requests',
      'hops compared',
      'at ztunnel',
      'at waypoints',
      'disagreements',
      'seconds',
    ],
    rows,
  );
  for (const d of found) console.log(d);
}
