/**
 * Trace benchmark: a sidecar mesh of 1,000 and 10,000 services (and as many VirtualServices) across 500
 * namespaces. Reports compile time (the mesh and every proxy's route tables), traces per second over
 * 100,000 requests (clients and services drawn with a fixed seed; median of three passes after a warm-up),
 * the per-trace time ratio between the two sizes, and peak memory.
 */
import { performance } from 'node:perf_hooks';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh, compileProxies } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
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

function measure(services: number): {
  services: number;
  compileMs: number;
  tracesPerSecond: number;
  microsPerTrace: number;
  ok: number;
} {
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
  let ok = 0;
  for (const input of inputs.slice(0, 10_000)) traceRequest(mesh, input); // warm-up, not timed
  const passes: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    (globalThis as { gc?: () => void }).gc?.();
    ok = 0;
    const t0 = performance.now();
    for (const input of inputs) if (traceRequest(mesh, input).response.code === 200) ok++;
    passes.push(performance.now() - t0);
  }
  const elapsed = passes.sort((a, b) => a - b)[1] as number;
  return {
    services,
    compileMs,
    tracesPerSecond: (requests / elapsed) * 1000,
    microsPerTrace: (elapsed * 1000) / requests,
    ok,
  };
}

const small = measure(1_000);
const large = measure(10_000);
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
