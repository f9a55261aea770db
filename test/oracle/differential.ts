/**
 * One differential run: a platform and the requests kfmesh traced on it, every traced hop at a sidecar or a
 * gateway asked of Istio's oracle, and the fields that differ.
 */
import { snapshotFromPath } from '../../src/cli/io.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceResult } from '../../src/model/trace-result.ts';
import { runKfmesh, writeManifest, type CliRun } from '../cli-process.ts';
import { askIstio, hopDisagreements, podsFor, type OracleProxy, type OracleRequest } from './istio-oracle.ts';
import { questionsFor, startedFrom, type Question } from './questions.ts';

const quiet = { stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };

/** One trace to compare: its label and the trace command's arguments (without the input path). */
export interface Traced {
  label: string;
  args: readonly string[];
}

/** What one differential run found. */
export interface DifferentialReport {
  /** Hops asked, and not asked (ztunnel, waypoints, hops without an address), by reason. */
  compared: number;
  skipped: string[];
  /** Each disagreement as `label hop N (kind ns/workload): field: kfmesh ≠ Istio`. */
  disagreements: string[];
  /** Configuration Istio's validation refuses. */
  rejected: string[];
  /** Each trace's command-line run, by label. */
  runs: Map<string, CliRun>;
}

/** Traces each request with the kfmesh CLI and asks the oracle about every hop it can answer. */
export async function differential(
  objects: readonly KubeObject[],
  traces: readonly Traced[],
): Promise<DifferentialReport> {
  const file = writeManifest(objects);
  const snapshot = await snapshotFromPath(file, quiet);
  const workloads = compileMesh(snapshot).workloads;
  const everything = [...objects, ...podsFor(workloads)];
  const proxies = new Map<string, OracleProxy>();
  const asked: { label: string; trace: TraceResult; question: Question }[] = [];
  const report: DifferentialReport = {
    compared: 0,
    skipped: [],
    disagreements: [],
    rejected: [],
    runs: new Map(),
  };
  for (const [n, t] of traces.entries()) {
    const run = runKfmesh(['trace', file, '-o', 'json', ...t.args]);
    report.runs.set(t.label, run);
    if (run.code !== 0) {
      report.disagreements.push(`${t.label}: kfmesh trace exited ${run.code}: ${run.stderr.trim()}`);
      continue;
    }
    const trace = JSON.parse(run.stdout) as TraceResult;
    const {
      proxies: ps,
      questions,
      skipped,
    } = questionsFor(everything, workloads, startedFrom(t.args), trace, `q${n}`);
    for (const p of ps) proxies.set(p.id, p);
    report.skipped.push(...skipped.map((s) => `${t.label}: ${s}`));
    for (const question of questions) asked.push({ label: t.label, trace, question });
  }
  if (asked.length === 0) return report;
  const requests: OracleRequest[] = asked.map((a) => a.question.request);
  const output = askIstio(everything, [...proxies.values()], requests);
  report.rejected = output.rejected ?? [];
  output.answers.forEach((answer, i) => {
    const { label, trace, question } = asked[i] as (typeof asked)[number];
    const hop = trace.hops[question.hop];
    if (!hop) return;
    report.compared++;
    for (const d of hopDisagreements(hop, answer))
      report.disagreements.push(
        `${label} hop ${question.hop} (${hop.kind} ${hop.namespace}/${hop.workload}): ${d}`,
      );
  });
  return report;
}

/**
 * The same comparison for requests traced in this process (many requests on one platform): each request
 * given as the trace's input, labelled.
 */
export async function differentialInProcess(
  objects: readonly KubeObject[],
  requests: readonly { label: string; input: TraceInput }[],
): Promise<DifferentialReport> {
  const snapshot = await snapshotFromPath(writeManifest(objects), quiet);
  const mesh = compileMesh(snapshot);
  const everything = [...objects, ...podsFor(mesh.workloads)];
  const proxies = new Map<string, OracleProxy>();
  const asked: { label: string; trace: TraceResult; question: Question }[] = [];
  const report: DifferentialReport = {
    compared: 0,
    skipped: [],
    disagreements: [],
    rejected: [],
    runs: new Map(),
  };
  for (const [n, r] of requests.entries()) {
    const trace = traceRequest(mesh, r.input);
    const started = {
      from: r.input.from,
      url: r.input.url,
      method: r.input.method ?? 'GET',
      headers: Object.fromEntries(
        Object.entries(r.input.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
      ),
    };
    const {
      proxies: ps,
      questions,
      skipped,
    } = questionsFor(everything, mesh.workloads, started, trace, `q${n}`);
    for (const p of ps) proxies.set(p.id, p);
    report.skipped.push(...skipped.map((s) => `${r.label}: ${s}`));
    for (const question of questions) asked.push({ label: r.label, trace, question });
  }
  if (asked.length === 0) return report;
  const output = askIstio(
    everything,
    [...proxies.values()],
    asked.map((a) => a.question.request),
  );
  report.rejected = output.rejected ?? [];
  output.answers.forEach((answer, i) => {
    const { label, trace, question } = asked[i] as (typeof asked)[number];
    const hop = trace.hops[question.hop];
    if (!hop) return;
    report.compared++;
    for (const d of hopDisagreements(hop, answer))
      report.disagreements.push(
        `${label} hop ${question.hop} (${hop.kind} ${hop.namespace}/${hop.workload}): ${d}`,
      );
  });
  return report;
}
