/**
 * The equivalence check spread out: over worker threads on this machine (`--jobs N`), and over machines
 * (`--shard I/N` writes one slice's part, `--merge PARTS...` makes the report of the parts). Both run the
 * same slices (`checkEquivalencePart`) and the same merge (`mergeEquivalence`) as the plain check, so
 * the report is the same bytes however the matrix was cut.
 */
import { formatIstioVersion, type IstioVersion } from '../mesh/istio-version.ts';
import { messageOf } from '../model/errors.ts';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Snapshot } from '../load/snapshot.ts';
import { toJson } from '../load/serialize.ts';
import type { ProbeReport } from '../verify/probes.ts';
import {
  combinePieces,
  mergeEquivalence,
  slicesProblem,
  type EquivalencePart,
  type EquivalenceResult,
  type Shard,
} from '../verify/equivalence.ts';
import type { PoolMessage, WorkerInput, WorkerMessage } from './equivalence-worker.ts';
import { UsageError } from './io.ts';

/** Reads `--shard I/N`: N slices, this one the I-th (from 0). */
export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const [index, count] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
  if (!(count >= 1 && index >= 0 && index < count))
    throw new UsageError(`--shard ${text}: expected I/N with 0 ≤ I < N (the slice I of N, from 0)`);
  return { index, count };
}

/** Reads `--jobs N`: a whole number of worker threads from 1. */
export function parseJobs(text: string): number {
  const jobs = Number(text);
  if (!Number.isInteger(jobs) || jobs < 1)
    throw new UsageError(`--jobs ${text}: expected a whole number from 1`);
  return jobs;
}

/** How the matrix is traced: every client (`--exhaustive`), and namespaces alike taken from one (symmetry). */
export interface Tracing {
  exhaustive: boolean;
  symmetry: boolean;
}

/** What the configurations are, for checking that parts of one report were made from the same ones. */
export function inputsDigest(
  before: Snapshot,
  after: Snapshot,
  options: { clusterDomain: string; istioVersion?: IstioVersion } & Tracing,
): string {
  const hash = createHash('sha256');
  hash
    .update(toJson(before.all()))
    .update('\0')
    .update(toJson(after.all()))
    .update('\0')
    .update(`${options.clusterDomain}\0${options.exhaustive}\0${options.symmetry}`)
    .update(options.istioVersion ? `\0${formatIstioVersion(options.istioVersion)}` : '');
  return hash.digest('hex');
}

/**
 * How many runs of units each worker gets on average: short runs even out the workers' loads (units cost
 * very different amounts), long ones keep a run's requests to a few namespaces, whose client splits the
 * worker then reuses.
 */
const runsPerWorker = 24;

/**
 * Traces the matrix in `jobs` worker threads: each compiles the matrix once, then takes runs of
 * consecutive units as it frees up; the pieces are combined as slices are.
 */
export async function equivalenceInWorkers(
  before: Snapshot,
  after: Snapshot,
  options: { jobs: number; clusterDomain: string } & Tracing,
  onProgress: (done: number, total: number) => void,
): Promise<EquivalenceResult> {
  const input: WorkerInput = {
    before: [...before.all()],
    after: [...after.all()],
    clusterDomain: options.clusterDomain,
    exhaustive: options.exhaustive,
    symmetry: options.symmetry,
  };
  const workers = Array.from(
    { length: options.jobs },
    () => new Worker(new URL('./equivalence-worker.js', import.meta.url), { workerData: input }),
  );
  const pieces: Omit<EquivalencePart, 'shard'>[] = [];
  let next = 0;
  let traced = 0;
  try {
    await Promise.all(
      workers.map(
        (worker, index) =>
          new Promise<void>((resolve, reject) => {
            let run = 1;
            const give = () => {
              if (next >= units) {
                worker.postMessage({ done: true } satisfies PoolMessage);
                resolve();
                return;
              }
              const from = next;
              next = Math.min(units, next + run);
              worker.postMessage({ from, to: next } satisfies PoolMessage);
            };
            let units = 0;
            worker.on('message', (message: WorkerMessage) => {
              if ('ready' in message) {
                units = message.ready.units;
                run = Math.max(1, Math.ceil(units / (options.jobs * runsPerWorker)));
                give();
              } else if ('piece' in message) {
                pieces.push(message.piece);
                traced += message.piece.sliceRequests;
                onProgress(traced, message.piece.requests);
                give();
              } else reject(new Error(`equivalence worker ${index}: ${message.error}`));
            });
            worker.on('error', reject);
          }),
      ),
    );
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return combinePieces(pieces);
}

/** A part as `--shard` writes it: the slice's findings, what they were made from, and (slice 0) the probes. */
export interface PartFile extends EquivalencePart {
  kfmesh: 'equivalence-part';
  version: 1;
  inputs: string;
  /** Whether the slice traced every client (`--exhaustive`); the report says so. */
  exhaustive: boolean;
  /** Whether namespaces alike up to renaming were traced once (absent: yes); the report says so. */
  symmetry?: boolean;
  probes?: ProbeReport;
}

/** The JSON of a part, for `--shard`. */
export function partFileText(
  part: EquivalencePart,
  inputs: string,
  tracing: Tracing,
  probes: ProbeReport | undefined,
): string {
  const file: PartFile = {
    kfmesh: 'equivalence-part',
    version: 1,
    inputs,
    exhaustive: tracing.exhaustive,
    symmetry: tracing.symmetry,
    ...part,
    ...(probes ? { probes } : {}),
  };
  return `${JSON.stringify(file)}\n`;
}

/**
 * Reads the parts `--merge` is given (files, or folders whose `.json` files are parts) and merges them:
 * the report, and the probes of slice 0. Exit 2 (UsageError) when a file is not a part, parts come from
 * different configurations, or a slice is missing or given twice.
 */
export async function mergePartFiles(
  paths: readonly string[],
): Promise<{ result: EquivalenceResult; probes: ProbeReport | undefined; tracing: Tracing }> {
  if (paths.length === 0) throw new UsageError('--merge takes the parts: files, or folders holding them');
  const files: string[] = [];
  for (const path of paths) files.push(...(await partPaths(path)));
  const parts = await Promise.all(files.map(readPart));
  const first = parts[0];
  if (!first) throw new UsageError(`--merge: no part in ${paths.join(', ')}`);
  const other = parts.find((p) => p.part.inputs !== first.part.inputs);
  if (other)
    throw new UsageError(
      `--merge: ${other.file} was made from other configurations than ${first.file} (another BEFORE, AFTER, --cluster-domain, --exhaustive or --no-symmetry)`,
    );
  const problem = slicesProblem(parts.map(({ file, part }) => ({ name: file, shard: part.shard })));
  if (problem) throw new UsageError(`--merge: ${problem}`);
  const result = mergeEquivalence(parts.map((p) => p.part));
  const probes = parts.find((p) => p.part.shard.index === 0)?.part.probes;
  const tracing = { exhaustive: first.part.exhaustive === true, symmetry: first.part.symmetry !== false };
  return { result, probes, tracing };
}

async function partPaths(path: string): Promise<string[]> {
  const info = await stat(path).catch(() => {
    throw new UsageError(`--merge ${path}: no such file or folder`);
  });
  if (!info.isDirectory()) return [path];
  const names = (await readdir(path)).filter((n) => n.endsWith('.json')).sort();
  return names.map((n) => join(path, n));
}

async function readPart(file: string): Promise<{ file: string; part: PartFile }> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`--merge ${file}: not a part of kfmesh verify --shard (${messageOf(error)})`);
  }
  const part = value as Partial<PartFile>;
  if (part.kfmesh !== 'equivalence-part' || part.version !== 1 || !part.shard || !Array.isArray(part.groups))
    throw new UsageError(`--merge ${file}: not a part of kfmesh verify --shard (version 1)`);
  return { file, part: part as PartFile };
}
