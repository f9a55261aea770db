/**
 * Trace benchmark: a mesh of 1,000 and 10,000 services (and as many VirtualServices or HTTPRoutes) across 500
 * namespaces, once with sidecars and once in ambient mode with a waypoint per namespace. Reports compile time (the mesh and every proxy's route tables), traces per second over
 * 100,000 requests (clients and services drawn with a fixed seed; median of five passes after a warm-up, alternating between the two sizes),
 * the per-trace time ratio between the two sizes, and peak memory.
 */
import { performance } from 'node:perf_hooks';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh, compileProxies } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import { peakRssMiB, printTable } from './harness.ts';
import { benchMesh } from './mesh-platform.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';

const namespaces = 500;
const requests = 100_000;

/** A small deterministic generator (mulberry32), so every run traces the same requests. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Mode = 'sidecar' | 'ambient';

interface Setup {
  mode: Mode;
  services: number;
  compileMs: number;
  mesh: ReturnType<typeof compileMesh>;
  inputs: TraceInput[];
  passes: number[];
  ok: number;
}

/** Compiles the mesh (and every proxy's route tables) and draws its requests. */
function setUp(services: number, mode: Mode): Setup {
  const snapshot = Snapshot.of(benchMesh(services, namespaces, mode));
  const start = performance.now();
  const mesh = compileMesh(snapshot, {});
  compileProxies(mesh);
  const compileMs = performance.now() - start;
  const next = random(42);
  const inputs = Array.from({ length: requests }, () => {
    const target = Math.floor(next() * services);
    const client = `ns-${Math.floor(next() * namespaces)}/client-0`;
    const canary = next() < 0.5;
    return {
      from: client,
      url: `http://svc-${target}.ns-${target % namespaces}.svc.cluster.local/predict`,
      method: 'POST',
      headers: (canary ? { 'x-canary': 'true' } : {}) as Record<string, string>,
    };
  });
  for (const input of inputs.slice(0, 10_000)) traceRequest(mesh, input); // warm-up, not timed
  return { mode, services, compileMs, mesh, inputs, passes: [], ok: 0 };
}

/** One timed pass over all the requests. */
function pass(setup: Setup): void {
  (globalThis as { gc?: () => void }).gc?.();
  let ok = 0;
  const t0 = performance.now();
  for (const input of setup.inputs) if (traceRequest(setup.mesh, input).response.code === 200) ok++;
  setup.passes.push(performance.now() - t0);
  setup.ok = ok;
}

const modes: Mode[] = ['sidecar', 'ambient'];
const setups = modes.flatMap((mode) => [setUp(1_000, mode), setUp(10_000, mode)]);
// Passes alternate between the setups, so a slow phase of the machine weighs on all alike.
for (let round = 0; round < 5; round++) for (const setup of setups) pass(setup);
const results = setups.map((s) => {
  const elapsed = [...s.passes].sort((a, b) => a - b)[Math.floor(s.passes.length / 2)] as number;
  return { ...s, tracesPerSecond: (requests / elapsed) * 1000, microsPerTrace: (elapsed * 1000) / requests };
});
printTable(
  `kfmesh trace: ${requests.toLocaleString('en')} requests, ${namespaces} namespaces`,
  ['mode', 'services (and routes)', 'compile (ms)', 'traces/s', 'µs per trace', 'answered 200'],
  results.map((m) => [
    m.mode,
    m.services,
    m.compileMs,
    Math.round(m.tracesPerSecond),
    m.microsPerTrace,
    m.ok,
  ]),
);
const perTrace = (mode: Mode, services: number): number =>
  results.find((r) => r.mode === mode && r.services === services)?.microsPerTrace ?? NaN;
printTable(
  'Scaling and memory',
  ['measure', 'value'],
  [
    ...modes.map((mode) => [
      `µs per trace, 10,000 / 1,000 services (${mode})`,
      perTrace(mode, 10_000) / perTrace(mode, 1_000),
    ]),
    [
      'µs per trace, ambient / sidecar (10,000 services)',
      perTrace('ambient', 10_000) / perTrace('sidecar', 10_000),
    ],
    ['peak RSS (MiB)', peakRssMiB()],
  ],
);
