/**
 * Memory benchmark: the peak resident memory of `kfmesh render` and `kfmesh analyze`, each run as the
 * command users run, over a generated Kubeflow platform of about 50 MB, against the input's size
 * (goal: at most 10x). The peak is the child process's own (`maxRSS` at exit), not this process's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toYaml } from '../../src/load/serialize.ts';
import { printTable } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

const cli = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'kfmesh-memory-'));
const input = join(folder, 'platform.yaml');
const text = toYaml(kubeflowBenchPlatform(8_000, 19_500));
writeFileSync(input, text);
// Loaded before the command: at exit, it writes the process's peak resident memory to stderr.
const probe = join(folder, 'peak.mjs');
writeFileSync(
  probe,
  "process.on('exit', () => process.stderr.write(`\\npeak-rss-kib ${process.resourceUsage().maxRSS}\\n`));\n",
);

function peakMiB(args: string[]): { seconds: number; mib: number } {
  const start = Date.now();
  const run = spawnSync(process.execPath, ['--import', probe, cli, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  const match = /peak-rss-kib (\d+)/.exec(run.stderr);
  if (!match || (run.status !== 0 && run.status !== 1))
    throw new Error(`kfmesh ${args.join(' ')} failed (${run.status}): ${run.stderr.slice(0, 500)}`);
  return { seconds: (Date.now() - start) / 1000, mib: Number(match[1]) / 1024 };
}

const inputMiB = Buffer.byteLength(text) / 1024 / 1024;
const rows = [
  ['render', ...Object.values(peakMiB(['render', input]))],
  ['analyze', ...Object.values(peakMiB(['analyze', input, '--fail-on', 'never']))],
].map(([command, seconds, mib]) => [
  command as string,
  inputMiB,
  seconds as number,
  mib as number,
  (mib as number) / inputMiB,
]);
printTable(
  'Peak memory over a generated Kubeflow platform (child process, one run)',
  ['command', 'input MiB', 'seconds', 'peak RSS MiB', 'peak / input'],
  rows,
);
rmSync(folder, { recursive: true, force: true });
