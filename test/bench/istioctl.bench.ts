/**
 * `kfmesh analyze` beside `istioctl analyze --use-kube=false`, built from the Istio module the oracle pins
 * (oracle/istio/go.mod), on the same machine in one run: the real Kubeflow platforms (../shared/real) and
 * generated Kubeflow platforms of about 10,000 and 50,000 objects. Each is a whole command as a user runs
 * it, from process start to exit, reading the same file; wall time is the median of three runs, peak
 * memory the largest resident set of those runs (GNU time's %M). istioctl runs over all namespaces and
 * prints infos too (-A --output-threshold Info), as kfmesh does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toYaml } from '../../src/load/serialize.ts';
import { projectRoot } from '../conformance/cases.ts';
import { istioctlBinary } from '../oracle/istio-oracle.ts';
import { printTable } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

const gnuTime = '/usr/bin/time';
const repeats = 3;

interface Run {
  seconds: number;
  peakMiB: number;
}

/** Runs a command `repeats` times under GNU time: the median wall time and the largest peak memory. */
function measure(command: string[]): Run {
  const runs: Run[] = [];
  for (let i = 0; i < repeats; i++) {
    const run = spawnSync(gnuTime, ['-f', '%e %M', ...command], { encoding: 'utf8', maxBuffer: 1 << 30 });
    // Findings at the failure threshold are an exit code of their own (kfmesh 1, istioctl 79), not a failure.
    if (run.status === null || ![0, 1, 79].includes(run.status))
      throw new Error(`${command.join(' ')}: ${run.stderr.slice(-2000)}`);
    const [seconds, kib] = (run.stderr.trim().split('\n').pop() ?? '').split(' ').map(Number);
    runs.push({ seconds: seconds ?? NaN, peakMiB: (kib ?? NaN) / 1024 });
  }
  const times = runs.map((r) => r.seconds).sort((a, b) => a - b);
  return {
    seconds: times[Math.floor(times.length / 2)] ?? NaN,
    peakMiB: Math.max(...runs.map((r) => r.peakMiB)),
  };
}

function inputs(dir: string): { name: string; file: string }[] {
  const real = join(projectRoot, '../shared/real');
  const found: { name: string; file: string }[] = [];
  const master = join(real, 'kubeflow-manifests/platform.yaml');
  if (existsSync(master)) found.push({ name: 'kubeflow-manifests (master)', file: master });
  const releases = join(real, 'releases');
  if (existsSync(releases))
    for (const f of readdirSync(releases)
      .filter((f) => f.endsWith('.yaml'))
      .sort())
      found.push({ name: f.replace(/\.yaml$/, ''), file: join(releases, f) });
  for (const [profiles, models, name] of [
    [540, 1_350, 'generated, 10k objects'],
    [2_700, 6_750, 'generated, 50k objects'],
  ] as const) {
    const file = join(dir, `${profiles}.yaml`);
    writeFileSync(file, toYaml(kubeflowBenchPlatform(profiles, models)));
    found.push({ name, file });
  }
  return found;
}

const istioctl = istioctlBinary();
if (!istioctl.path) console.log(`\n(istioctl analyze not compared: ${istioctl.missing})`);
else if (!existsSync(gnuTime))
  console.log(`\n(istioctl analyze not compared: needs GNU time at ${gnuTime}, Debian's "time")`);
else {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-istioctl-bench-'));
  const cli = join(projectRoot, 'dist/src/cli/main.js');
  const rows: (string | number)[][] = [];
  let worstTime = 0;
  let worstMemory = 0;
  let worstSmall = 0;
  for (const input of inputs(dir)) {
    const documents = (readFileSync(input.file, 'utf8').match(/^kind: /gm) ?? []).length;
    const kfmesh = measure([process.execPath, cli, 'analyze', '-o', 'json', input.file]);
    const istio = measure([
      istioctl.path,
      'analyze',
      '--use-kube=false',
      '-A',
      '--output-threshold',
      'Info',
      '-o',
      'json',
      input.file,
    ]);
    const timeRatio = kfmesh.seconds / istio.seconds;
    const memoryRatio = kfmesh.peakMiB / istio.peakMiB;
    // Below a few hundred objects both commands are mostly their start: Node's against a Go binary's.
    if (documents < 300) worstSmall = Math.max(worstSmall, timeRatio);
    else worstTime = Math.max(worstTime, timeRatio);
    worstMemory = Math.max(worstMemory, memoryRatio);
    rows.push([
      input.name,
      documents,
      kfmesh.seconds,
      istio.seconds,
      timeRatio,
      Math.round(kfmesh.peakMiB),
      Math.round(istio.peakMiB),
      memoryRatio,
    ]);
  }
  rmSync(dir, { recursive: true, force: true });
  printTable(
    `kfmesh analyze beside istioctl analyze --use-kube=false (whole command; median of ${repeats} runs)`,
    [
      'input',
      'objects',
      'kfmesh s',
      'istioctl s',
      'time kfmesh/istioctl',
      'kfmesh MiB',
      'istioctl MiB',
      'memory kfmesh/istioctl',
    ],
    rows,
  );
  console.log(
    `\nlargest ratios: time ${worstTime.toFixed(2)} on inputs of 300 objects or more (goal ≤ 1.0), ${worstSmall.toFixed(2)} below; memory ${worstMemory.toFixed(2)}`,
  );
}
