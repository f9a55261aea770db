/**
 * One differential run: a platform and the requests kfmesh traced on it, every traced hop at a sidecar, a
 * gateway, a waypoint or a destination's ztunnel asked of Istio's oracle, and the fields that differ.
 */
import { NewestModelledVersion } from '../../src/mesh/istio-version.ts';
import { snapshotFromPath } from '../../src/cli/io.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceResult } from '../../src/model/trace-result.ts';
import { runKfmesh, writeManifest, type CliRun } from '../cli-process.ts';
import { askIstio, hopDisagreements, podsFor, withClusterIPs, type OracleProxy } from './istio-oracle.ts';
import { questionsFor, startedFrom, type Question, type Started } from './questions.ts';
import type { Workload } from '../../src/mesh/workloads.ts';

const quiet = { stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };

/** One trace to compare: its label and the trace command's arguments (without the input path). */
export interface Traced {
  label: string;
  args: readonly string[];
}

/** What one differential run found. */
export interface DifferentialReport {
  /** Hops asked, and not asked (waypoints not reached from an ambient client, hops without an address), by reason. */
  compared: number;
  /** Of the hops compared, those at a destination's ztunnel (its L4 authorization), and at waypoints. */
  ztunnel: number;
  waypoint: number;
  skipped: string[];
  /** Each disagreement as `label hop N (kind ns/workload): field: kfmesh ≠ Istio`. */
  disagreements: string[];
  /** Configuration Istio's validation refuses. */
  rejected: string[];
  /** Each trace's command-line run, by label. */
  runs: Map<string, CliRun>;
  /** Each trace kfmesh made, by label. */
  traces: Map<string, TraceResult>;
}

/** One trace kfmesh made, with the request it started from. */
interface Made {
  label: string;
  started: Started;
  trace: TraceResult;
}

/** A platform as both sides see it: kfmesh's workloads, and every object with a pod for each made-up one. */
async function platform(objects: readonly KubeObject[]) {
  const file = writeManifest(objects);
  // The oracle is Istio's code at the pinned version, the newest kfmesh models: simulate that one.
  const mesh = compileMesh(await snapshotFromPath(file, quiet), { istioVersion: NewestModelledVersion });
  return {
    file,
    mesh,
    everything: [...withClusterIPs(objects, mesh.services), ...podsFor(mesh.workloads)],
  };
}

/** Asks the oracle about every hop of the traces it can answer, and records what differs. */
function compare(
  everything: readonly KubeObject[],
  workloads: readonly Workload[],
  made: readonly Made[],
  report: DifferentialReport,
): DifferentialReport {
  const proxies = new Map<string, OracleProxy>();
  const asked: { label: string; trace: TraceResult; question: Question }[] = [];
  for (const m of made) report.traces.set(m.label, m.trace);
  for (const [n, m] of made.entries()) {
    const {
      proxies: ps,
      questions,
      skipped,
    } = questionsFor(everything, workloads, m.started, m.trace, `q${n}`);
    for (const p of ps) proxies.set(p.id, p);
    report.skipped.push(...skipped.map((s) => `${m.label}: ${s}`));
    for (const question of questions) asked.push({ label: m.label, trace: m.trace, question });
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
    if (hop.kind === 'ztunnel') report.ztunnel++;
    if (hop.kind === 'waypoint') report.waypoint++;
    for (const d of hopDisagreements(hop, answer))
      report.disagreements.push(
        `${label} hop ${question.hop} (${hop.kind} ${hop.namespace}/${hop.workload}): ${d}`,
      );
  });
  return report;
}

const emptyReport = (): DifferentialReport => ({
  compared: 0,
  ztunnel: 0,
  waypoint: 0,
  skipped: [],
  disagreements: [],
  rejected: [],
  runs: new Map(),
  traces: new Map(),
});

/** Traces each request with the kfmesh CLI and asks the oracle about every hop it can answer. */
export async function differential(
  objects: readonly KubeObject[],
  traces: readonly Traced[],
): Promise<DifferentialReport> {
  const { file, mesh, everything } = await platform(objects);
  const report = emptyReport();
  const made: Made[] = [];
  for (const t of traces) {
    const run = runKfmesh(['trace', file, '-o', 'json', ...t.args]);
    report.runs.set(t.label, run);
    if (run.code !== 0) {
      report.disagreements.push(`${t.label}: kfmesh trace exited ${run.code}: ${run.stderr.trim()}`);
      continue;
    }
    made.push({ label: t.label, started: startedFrom(t.args), trace: JSON.parse(run.stdout) as TraceResult });
  }
  return compare(everything, mesh.workloads, made, report);
}

/**
 * The same comparison for requests traced in this process (many requests on one platform): each request
 * given as the trace's input, labelled.
 */
export async function differentialInProcess(
  objects: readonly KubeObject[],
  requests: readonly { label: string; input: TraceInput }[],
): Promise<DifferentialReport> {
  const { mesh, everything } = await platform(objects);
  const made = requests.map((r) => ({
    label: r.label,
    started: {
      from: r.input.from,
      url: r.input.url,
      method: r.input.method ?? 'GET',
      headers: Object.fromEntries(
        Object.entries(r.input.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
      ),
    },
    trace: traceRequest(mesh, r.input),
  }));
  return compare(everything, mesh.workloads, made, emptyReport());
}
