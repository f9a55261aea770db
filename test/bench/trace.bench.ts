/**
 * Trace benchmark: a sidecar mesh of 1,000 and 10,000 services (and as many VirtualServices) across 500
 * namespaces. Reports compile time (the mesh and every proxy's route tables), traces per second over
 * 100,000 requests (clients and services drawn with a fixed seed; median of five passes after a warm-up, alternating between the two sizes),
 * the per-trace time ratio between the two sizes, and peak memory.
 */
import { performance } from 'node:perf_hooks';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh, compileProxies } from '../../src/mesh/mesh.ts';
import { traceRequest, type TraceInput } from '../../src/mesh/trace.ts';
import { peakRssMiB, printTable } from './harness.ts';
import { benchMesh } from './mesh-platform.ts';

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

interface Setup {
  services: number;
  compileMs: number;
  mesh: ReturnType<typeof compileMesh>;
  inputs: TraceInput[];
  passes: number[];
  ok: number;
}

/** Compiles the mesh (and every proxy's route tables) and draws its requests. */
function setUp(services: number): Setup {
  const snapshot = Snapshot.of(benchMesh(services, namespaces));
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
  return { services, compileMs, mesh, inputs, passes: [], ok: 0 };
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

const setups = [setUp(1_000), setUp(10_000)];
// Passes alternate between the sizes, so a slow phase of the machine weighs on both alike.
for (let round = 0; round < 5; round++) for (const setup of setups) pass(setup);
const results = setups.map((s) => {
  const elapsed = [...s.passes].sort((a, b) => a - b)[Math.floor(s.passes.length / 2)] as number;
  return { ...s, tracesPerSecond: (requests / elapsed) * 1000, microsPerTrace: (elapsed * 1000) / requests };
});
const [small, large] = results as [(typeof results)[number], (typeof results)[number]];
printTable(
  `kfmesh trace: ${requests.toLocaleString('en')} requests, ${namespaces} namespaces`,
  ['services (and VirtualServices)', 'compile (ms)', 'traces/s', 'µs per trace', 'answered 200'],
  [small, large].map((m) => [m.services, m.compileMs, Math.round(m.tracesPerSecond), m.microsPerTrace, m.ok]),
);
printTable(
  'Scaling and memory',
  ['measure', 'value'],
  [
    ['µs per trace, 10,000 / 1,000 services', large.microsPerTrace / small.microsPerTrace],
    ['peak RSS (MiB)', peakRssMiB()],
  ],
);
