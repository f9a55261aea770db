/**
 * `kfmesh verify --cases FILE`: request expectations checked against a configuration; and
 * `kfmesh verify --equivalence BEFORE AFTER`: what a change of configuration does to every request.
 */
import { availableParallelism } from 'node:os';
import { OutputFormat } from '../load/serialize.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { parseCases, runCases, type CaseResult, type VerifyCase } from '../verify/cases.ts';
import {
  checkEquivalencePart,
  combinePieces,
  EquivalenceMatrix,
  describeOutcome,
  type EquivalenceResult,
  type MatrixRequest,
} from '../verify/equivalence.ts';
import { checkProbes, type ProbeReport } from '../verify/probes.ts';
import type { FlowReport } from '../verify/flows.ts';
import {
  equivalenceInWorkers,
  inputsDigest,
  mergePartFiles,
  parseJobs,
  parseShard,
  partFileText,
  type Tracing,
} from './equivalence-jobs.ts';
import { writeWhole } from './migrate.ts';
import {
  ExitCode,
  istioVersionFlag,
  versionNote,
  oneOf,
  readFlagFile,
  runCommand,
  snapshotFrom,
  snapshotFromPath,
  UsageError,
  type ClusterFlags,
  type Streams,
} from './io.ts';

/** Options of `kfmesh verify` as parsed from the command line. */
export interface VerifyFlags extends ClusterFlags {
  equivalence?: boolean;
  exhaustive?: boolean;
  /** false with --no-symmetry: trace every namespace, even those alike up to renaming. */
  symmetry?: boolean;
  cases?: string;
  output: string;
  clusterDomain: string;
  /** Worker threads for --equivalence (default: the cores available). */
  jobs?: string;
  /** `I/N`: trace one slice of the matrix and write its part. */
  shard?: string;
  /** Where --shard writes its part (default: standard output). */
  part?: string;
  /** Merge the parts the paths name into the report. */
  merge?: boolean;
  istioVersion?: string;
}

/**
 * Runs `kfmesh verify`. Exit 1 when a case fails, or a request denied before is answered after (of the
 * matrix, or a probe of what the controllers create next). Probes that lose access are listed as failed,
 * as lost access in the matrix is a warning.
 */
export function verifyCommand(paths: string[], flags: VerifyFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const format = oneOf('-o', flags.output, ['text', 'json'] as const);
    if (flags.equivalence && flags.cases !== undefined)
      throw new UsageError('--cases and --equivalence are two different checks: give one');
    if (flags.merge) {
      const others = [
        flags.equivalence,
        flags.cases,
        flags.shard,
        flags.jobs,
        flags.exhaustive,
        flags.symmetry === false ? false : undefined,
        flags.kubeconfig,
      ];
      if (others.some((flag) => flag !== undefined && flag !== false))
        throw new UsageError(
          '--merge takes only the parts that verify --equivalence --shard wrote (and -o); the slices said how they were traced',
        );
      const { result, probes, tracing } = await mergePartFiles(paths);
      return report(result, probes, format, tracing, streams);
    }
    if (!flags.equivalence) {
      if (flags.cases === undefined)
        throw new UsageError('say what to verify: --cases FILE, or --equivalence BEFORE AFTER');
      return verifyCases(paths, flags, flags.cases, format, streams);
    }
    return verifyEquivalence(paths, flags, format, streams);
  });
}

/**
 * Below this many requests the default (`--jobs` not given) traces in the command's own thread: a worker
 * takes about 0.3 s to start (its copy of the configurations, compiled), while the check traces about
 * 2.7 million requests a second (200 Profiles: 30.7 million in 11.4 s), so workers would cost more than
 * they save.
 */
const requestsWorthWorkers = 1_000_000;

async function verifyEquivalence(
  paths: string[],
  flags: VerifyFlags,
  format: 'text' | 'json',
  streams: Streams,
): Promise<ExitCode> {
  const shard = flags.shard === undefined ? undefined : parseShard(flags.shard);
  if (shard && flags.jobs !== undefined)
    throw new UsageError('--shard traces its slice in one thread: give --jobs or --shard, not both');
  if (flags.part !== undefined && !shard) throw new UsageError('--part is where --shard writes its part');
  const jobs = flags.jobs === undefined ? availableParallelism() : parseJobs(flags.jobs);
  // With --kubeconfig, the live cluster is BEFORE and the one path is AFTER (a planned change).
  const wanted = flags.kubeconfig ? 1 : 2;
  if (paths.length !== wanted)
    throw new UsageError(
      flags.kubeconfig
        ? `--equivalence with --kubeconfig compares the cluster with one path (AFTER); got ${paths.length}`
        : `--equivalence takes two paths, BEFORE and AFTER; got ${paths.length}`,
    );
  const [before, after] = flags.kubeconfig
    ? await Promise.all([snapshotFrom([], streams, flags), snapshotFromPath(paths[0] ?? '', streams)])
    : await Promise.all(paths.map((p) => snapshotFromPath(p, streams)));
  if (!before || !after) throw new UsageError('--equivalence takes two paths, BEFORE and AFTER');
  let lastShown = Date.now();
  const onProgress = (done: number, total: number) => {
    if (Date.now() - lastShown < 2000) return;
    lastShown = Date.now();
    streams.stderr(`kfmesh: traced ${done} of ${total} requests\n`);
  };
  const istioVersion = istioVersionFlag(flags.istioVersion);
  streams.stderr(versionNote(before, istioVersion));
  const options = {
    clusterDomain: flags.clusterDomain,
    exhaustive: flags.exhaustive === true,
    symmetry: flags.symmetry !== false,
    ...(istioVersion ? { istioVersion } : {}),
  };
  const probesOf = () =>
    checkProbes(before, after, {
      clusterDomain: flags.clusterDomain,
      ...(istioVersion ? { istioVersion } : {}),
    });
  if (shard) {
    const part = checkEquivalencePart(before, after, { ...options, shard, onProgress });
    const text = partFileText(
      part,
      inputsDigest(before, after, options),
      options,
      shard.index === 0 ? probesOf() : undefined,
    );
    if (flags.part === undefined) streams.stdout(text);
    else await writeWhole(flags.part, text);
    return ExitCode.Ok;
  }
  // By default a small matrix is traced here: starting workers would cost more than it saves. So is a
  // matrix with namespaces alike up to renaming: each worker would find the classes again and trace the
  // requests others take their outcomes from (200 Profiles: two workers took 1.6 times one thread's time).
  const matrix = new EquivalenceMatrix(before, after, options);
  const small = matrix.requests < requestsWorthWorkers || matrix.namespaceClasses.length > 0;
  if (jobs === 1 || (flags.jobs === undefined && small)) {
    const result = combinePieces([matrix.trace(() => true, { onProgress })]);
    return report(result, probesOf(), format, options, streams);
  }
  // The workers trace the matrix while this thread runs the probes.
  const inWorkers = equivalenceInWorkers(before, after, { ...options, jobs }, onProgress);
  const probes = probesOf();
  return report(await inWorkers, probes, format, options, streams);
}

/** Prints the report of the matrix and the probes; exit 1 when either opens access. */
function report(
  result: EquivalenceResult,
  probes: ProbeReport | undefined,
  format: 'text' | 'json',
  tracing: Tracing,
  streams: Streams,
): ExitCode {
  streams.stdout(
    format === OutputFormat.Json
      ? `${JSON.stringify(probes ? { ...result, probes } : result, null, 2)}\n`
      : `${probes ? flowsText(probes.flows) : ''}${equivalenceText(result, tracing)}${probes ? probesText(probes) : ''}`,
  );
  return result.errors > 0 || (probes?.opened ?? 0) > 0 || (probes?.flows.broken ?? 0) > 0
    ? ExitCode.CheckFailed
    : ExitCode.Ok;
}

async function verifyCases(
  paths: string[],
  flags: VerifyFlags,
  file: string,
  format: 'text' | 'json',
  streams: Streams,
): Promise<ExitCode> {
  if (file === '-' && paths.includes('-'))
    throw new UsageError('--cases - reads standard input: the configuration must then come from files');
  const text = await readFlagFile('--cases', file, streams);
  const cases = parseCases(text, file === '-' ? '<stdin>' : file);
  const snapshot = await snapshotFrom(paths, streams, flags);
  const results = runCases(compileMesh(snapshot, { clusterDomain: flags.clusterDomain }), cases);
  const failed = results.filter((r) => !r.passed).length;
  streams.stdout(
    format === OutputFormat.Json
      ? `${JSON.stringify({ passed: results.length - failed, failed, cases: results }, null, 2)}\n`
      : casesText(results),
  );
  const unmet = ambientUnmet(cases, results);
  if (unmet > 0)
    streams.stderr(
      `kfmesh: note: ${unmet} failed case${unmet === 1 ? ' expects' : 's expect'} ztunnel or waypoint hops that no request met: ` +
        `is the input in ambient mode? (the built-in example's ambient form is \`kfmesh example --mode ambient\`)\n`,
    );
  return failed > 0 ? ExitCode.CheckFailed : ExitCode.Ok;
}

/** Failed cases that expect ambient proxies (ztunnel, waypoint) when no request of them met one. */
function ambientUnmet(cases: readonly VerifyCase[], results: readonly CaseResult[]): number {
  const ambient = (hops: readonly string[] | undefined) =>
    (hops ?? []).some((h) => h === 'ztunnel' || h === 'waypoint');
  const failed = results.filter((r, i) => !r.passed && ambient(cases[i]?.expect.hops));
  return failed.length > 0 && !results.some((r) => ambient(r.actual.hops)) ? failed.length : 0;
}

/** One line per case (PASS/FAIL), the expectations that failed under each failure, then the counts. */
function casesText(results: readonly CaseResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    const where = !r.passed && r.location ? `  (${r.location})` : '';
    lines.push(`${r.passed ? 'PASS' : 'FAIL'} ${r.name}${where}`);
    for (const f of r.failures) lines.push(`     ${f}`);
    if (!r.passed) lines.push(`     outcome: ${r.actual.summary}`);
  }
  const failed = results.filter((r) => !r.passed).length;
  lines.push('', `${results.length - failed} passed, ${failed} failed`);
  return `${lines.join('\n')}\n`;
}

/** The text report: the verdict, then each group of changed requests with examples. */
function equivalenceText(
  result: EquivalenceResult,
  tracing: Tracing = { exhaustive: false, symmetry: true },
): string {
  const classes = `one client of each class per request, where clients route alike and every policy on the way sees them alike`;
  const lines = [
    `${result.requests} requests compared on both configurations: ${result.unchanged} unchanged; ` +
      `${result.errors} errors (denied before, answered after), ${result.warnings} warnings, ${result.notes} notes.`,
    tracing.exhaustive
      ? `(${result.traces} traces: every request for every client)`
      : tracing.symmetry
        ? `(${result.traces} traces: ${classes}; requests to namespaces alike up to renaming, such as Profiles, taken from one of them)`
        : `(${result.traces} traces: ${classes})`,
  ];
  for (const g of result.groups) {
    lines.push('', `${g.severity}: ${g.count} request(s): ${g.cause}`);
    for (const e of g.examples) lines.push(`  - ${requestText(e.request)}`);
    if (g.count > g.examples.length) lines.push(`  - … and ${g.count - g.examples.length} more`);
  }
  lines.push(
    '',
    result.errors > 0
      ? 'NOT EQUIVALENT: the change opens access.'
      : 'No request denied before is allowed after.',
  );
  return `${lines.join('\n')}\n`;
}

function requestText(r: MatrixRequest): string {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => ` -H '${k}: ${k === 'authorization' ? 'Bearer …' : v}'`)
    .join('');
  return `${r.method} ${r.url}${r.pod ? ` (pod of ${r.pod})` : ''} from ${r.from}${headers}`;
}

/**
 * The platform's flows, first: each broken one with both outcomes and what to do, then the count of those
 * that did not work before either.
 */
function flowsText(report: FlowReport): string {
  if (report.flows === 0) return '';
  const lines = [
    `${report.flows} flows of the platform (its front door, its Profiles' calls, the API server's webhook calls): ${report.broken} broken.`,
  ];
  for (const r of report.results) {
    if (!r.broken) continue;
    lines.push('', `error: broken flow: ${r.name}`, `  - ${requestText(r.request)}`);
    lines.push(`  before: ${describeOutcome(r.before)}`, `  after:  ${describeOutcome(r.after)}`);
    if (r.fix) lines.push(`  fix:    ${r.fix}`);
  }
  const neither = report.results.filter((r) => !r.asIntended.before && !r.asIntended.after);
  if (neither.length > 0)
    lines.push(
      '',
      `${neither.length} flow(s) did not work before the change either (first: ${neither[0]?.name ?? ''}: ${neither[0] ? describeOutcome(neither[0].after) : ''}).`,
    );
  return `${lines.join('\n')}\n\n`;
}

/**
 * The probes: what they stand for, each failed one with both outcomes, the ones not as meant on either
 * side, then the verdict.
 */
function probesText(report: ProbeReport): string {
  if (report.probes === 0) return '';
  const lines = [
    '',
    `${report.probes} probes of what the ${report.controllers.join(', ')} create next: ${report.failed} failed (${report.opened} opening access).`,
  ];
  const show = (r: ProbeReport['results'][number], label: string) => {
    lines.push('', `${label}: ${r.name}`, `  - ${requestText(r.request)}`);
    lines.push(`  before: ${describeOutcome(r.before)}`);
    if (r.why?.before) lines.push(`          ${r.why.before}`);
    lines.push(`  after:  ${describeOutcome(r.after)}`);
    if (r.why?.after) lines.push(`          ${r.why.after}`);
  };
  for (const r of report.results) if (r.failed) show(r, 'probe failed');
  for (const r of report.results)
    if (!r.asIntended.before && !r.asIntended.after) show(r, 'probe not as meant on either side');
  lines.push(
    '',
    report.opened > 0
      ? 'PROBES FAILED: the change opens access to what the controllers create next.'
      : report.failed > 0
        ? 'PROBES FAILED: what the controllers create next works before the change and not after.'
        : 'Every probe that works before the change works after it.',
  );
  return `${lines.join('\n')}\n`;
}
