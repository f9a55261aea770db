/** Times `desiredState` alone for N InferenceServices (argument), five runs: for profiling with --cpu-prof. */
import { performance } from 'node:perf_hooks';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { benchPlatform } from './platform.ts';

const count = Number(process.argv[2] ?? 10_000);
const snapshot = Snapshot.of(benchPlatform(count));
for (let i = 0; i < 5; i++) {
  const start = performance.now();
  desiredState(snapshot, { mode: 'sidecar' });
  console.log(`${count} InferenceServices: ${(performance.now() - start).toFixed(0)} ms`);
}
