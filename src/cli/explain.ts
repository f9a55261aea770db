/** `kfmesh explain`: observed Istio metrics, each series traced back to the configuration. */
import { installedIstioVersion, observedIstioVersion } from '../mesh/installed-version.ts';
import { messageOf } from '../model/errors.ts';
import { describeRef } from '../model/object.ts';
import { parseExposition, seriesText, type Sample } from '../load/exposition.ts';
import { durationPattern, durationSeconds, increaseQuery, samplesFromQuery } from '../load/prometheus.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { formatIstioVersion } from '../mesh/istio-version.ts';
import { analyze } from '../analyze/analyze.ts';
import { traceLine } from '../analyze/evidence.ts';
import {
  explainChange,
  explainMetrics,
  ExplainedMetrics,
  type ChangeReport,
  type ExplainReport,
  type ObservedSeries,
} from '../explain/explain.ts';
import { kubectlPatch } from '../analyze/patches.ts';
import {
  ExitCode,
  istioVersionFlag,
  versionNote,
  oneOf,
  readFlagFile,
  runCommand,
  snapshotFrom,
  UsageError,
  type ClusterFlags,
  type Streams,
} from './io.ts';

/** Options of `kfmesh explain` as parsed from the command line. */
export interface ExplainFlags extends ClusterFlags, MetricsFlags {
  output: string;
  istioVersion?: string;
  clusterDomain: string;
}

/** Runs `kfmesh explain`. */
export function explainCommand(paths: string[], flags: ExplainFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const format = oneOf('-o', flags.output, ['text', 'json'] as const);
    const version = istioVersionFlag(flags.istioVersion);
    const { samples, source, seconds } = await observedMetrics(flags);
    const after =
      flags.metricsAfter === undefined ? undefined : await readMetrics('--metrics-after', flags.metricsAfter);
    const snapshot = await snapshotFrom(paths, streams, flags);
    // With no version in the input, the one the metrics report (istio_build).
    const observed = version || installedIstioVersion(snapshot) ? undefined : observedIstioVersion(samples);
    const chosen = version ?? observed?.version;
    const options = { ...(chosen ? { istioVersion: chosen } : {}), clusterDomain: flags.clusterDomain };
    streams.stderr(versionNote(snapshot, version, observed));
    const findings = analyze(snapshot, { clusterDomain: flags.clusterDomain });
    const mesh = compileMesh(snapshot, options);
    const versionText = formatIstioVersion(mesh.version);
    if (after) {
      const change = explainChange(snapshot, options, findings, samples, after);
      streams.stdout(
        format === 'json'
          ? `${JSON.stringify({ istioVersion: versionText, ...changeDocument(change) }, null, 2)}\n`
          : changeText(change, versionText, source, flags.metricsAfter ?? ''),
      );
      return ExitCode.Ok;
    }
    const report = explainMetrics(mesh, findings, samples);
    streams.stdout(
      format === 'json'
        ? `${JSON.stringify({ istioVersion: versionText, ...(seconds ? { window: flags.window, seconds } : {}), summary: summaryOf(report), ...report }, null, 2)}\n`
        : explainText(report, versionText, source, seconds),
    );
    return ExitCode.Ok;
  });
}

/** The flags that give observed metrics (explain's and serve's). */
export interface MetricsFlags {
  metrics?: string;
  prometheus?: string;
  window: string;
  metricsAfter?: string;
}

/**
 * The metrics the flags name, read (a file) or asked for (a Prometheus server), with where they came from;
 * one of the two must be given. A bad combination or window is a usage error.
 */
export async function observedMetrics(
  flags: MetricsFlags,
): Promise<{ samples: Sample[]; source: string; seconds?: number; unit: 'line' | 'result' }> {
  if (flags.metrics !== undefined && flags.prometheus !== undefined)
    throw new UsageError('give the metrics one way: --metrics FILE or --prometheus URL, not both');
  if (flags.metrics === undefined && flags.prometheus === undefined)
    throw new UsageError(
      'give the metrics: --metrics FILE (Prometheus exposition text) or --prometheus URL (a Prometheus server), one of them',
    );
  if (flags.metricsAfter !== undefined && flags.metrics === undefined)
    throw new UsageError('--metrics-after compares with --metrics FILE: give both as files');
  if (!durationPattern.test(flags.window))
    throw new UsageError(
      `--window must be a Prometheus duration such as 1h or 30m, got ${JSON.stringify(flags.window)}`,
    );
  if (flags.metrics !== undefined)
    return { samples: await readMetrics('--metrics', flags.metrics), source: flags.metrics, unit: 'line' };
  const prometheus = flags.prometheus ?? '';
  return {
    samples: await queryPrometheus(prometheus, flags.window),
    source: `${prometheus} (${ExplainedMetrics.map((m) => increaseQuery(m, flags.window)).join(', ')})`,
    // Counts over a known window are also rates; a file's counters have no window.
    seconds: durationSeconds(flags.window),
    unit: 'result',
  };
}

/**
 * Each series' count over the window, from a Prometheus server's query API (one query a metric; a series'
 * "line" is its place in the answers, counted on from one query to the next); no answer or an error exits 2.
 */
async function queryPrometheus(base: string, window: string) {
  const samples: Sample[] = [];
  for (const metric of ExplainedMetrics) {
    const query = increaseQuery(metric, window);
    const url = `${base.replace(/\/+$/, '')}/api/v1/query?query=${encodeURIComponent(query)}`;
    let body: string;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
      body = await response.text();
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message;
      throw new UsageError(`--prometheus ${base}: no answer (${cause ?? messageOf(error)})`);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(body);
    } catch {
      throw new UsageError(`--prometheus ${base}: the answer to ${query} is not JSON: ${body.slice(0, 200)}`);
    }
    const offset = samples.length;
    for (const sample of samplesFromQuery(answer, metric, `--prometheus ${base}`))
      samples.push({ ...sample, line: sample.line + offset });
  }
  return samples;
}

/** The samples of a metrics file; a missing file is a usage error, a malformed line an input error. */
async function readMetrics(flag: string, file: string) {
  return parseExposition({ name: file, text: await readFlagFile(flag, file) }).samples;
}

function changeDocument(change: ChangeReport) {
  return {
    before: { summary: summaryOf(change.before), ...change.before },
    after: { summary: summaryOf(change.after), ...change.after },
    gone: change.gone,
    appeared: change.appeared,
    fixes: change.fixes,
  };
}

/** A series as a report line: its count, its labels, and where it was read (a file's line, a query's result). */
function seriesLine(series: ObservedSeries, unit: 'line' | 'result' = 'line'): string {
  return `    ${series.value}  ${seriesText({ name: series.metric, labels: series.labels })}  (${unit} ${series.line})`;
}

/** Both windows explained, then what changed and the fix that accounts for it. */
function changeText(change: ChangeReport, version: string, before: string, after: string): string {
  const lines = [
    `before: ${explainText(change.before, version, before)}`,
    `after: ${explainText(change.after, version, after)}`,
    `change: ${change.gone.length} series gone, ${change.appeared.length} appeared`,
  ];
  if (change.gone.length > 0) lines.push('  gone:', ...change.gone.map((g) => seriesLine(g)));
  if (change.appeared.length > 0) lines.push('  appeared:', ...change.appeared.map((a) => seriesLine(a)));
  for (const fix of change.fixes) {
    const f = fix.finding;
    lines.push(
      `the after window is the effect of ${f.code}'s fix on ${describeRef(f.object)}${f.field ? ` ${f.field}` : ''}: with its patch, the configuration produces ${fix.produces.length} series of the after window it could not before`,
      ...fix.produces.map((p) => seriesLine(p)),
    );
  }
  if (change.fixes.length === 0 && change.after.drift.length > 0)
    lines.push("no finding's fix accounts for the after window's drift: the cluster changed in another way");
  return `${lines.join('\n')}\n`;
}

function summaryOf(report: ExplainReport) {
  return {
    explained: report.causes.reduce((n, c) => n + c.series.length, 0),
    drift: report.drift.length,
    untraced: report.untraced.length,
    otherSamples: report.otherSamples,
  };
}

// Why long: the text report's three parts (causes with their series and traces, drift with the nearest
// trace, untraced series) written out in one place.
function explainText(report: ExplainReport, version: string, file: string, seconds?: number): string {
  const s = summaryOf(report);
  const lines = [
    `${s.explained + s.drift + s.untraced} series of ${ExplainedMetrics.join(' and ')} in ${file} (Istio ${version}): ${s.explained} explained by the configuration, ${s.drift} drift, ${s.untraced} not traced${s.otherSamples > 0 ? `; ${s.otherSamples} samples of other metrics left alone` : ''}`,
    '',
  ];
  const unit = seconds === undefined ? 'line' : 'result';
  const line = (series: ObservedSeries) => seriesLine(series, unit);
  const rate = (total: number) => (seconds ? ` (${formatRate(total / seconds)}/s)` : '');
  for (const cause of report.causes) {
    const f = cause.finding;
    lines.push(
      f
        ? `cause: ${f.code} ${describeRef(f.object)}${f.field ? ` ${f.field}` : ''}: ${f.message}`
        : `cause: ${cause.summary}`,
    );
    if (f?.fix) lines.push(`  fix: ${f.fix}`);
    if (f?.patch) lines.push(`  patch: ${kubectlPatch(f)}`);
    lines.push(
      `  ${cause.series.length} series, ${cause.total} requests or connections${rate(cause.total)}:`,
    );
    for (const series of cause.series) {
      lines.push(line(series));
      lines.push(`      reported by ${series.proxy}; trace: ${traceLine(series.request, series.trace)}`);
    }
    lines.push('');
  }
  if (report.drift.length > 0) {
    lines.push('drift: the cluster differs from this configuration, which produces none of these series:');
    for (const series of report.drift) {
      lines.push(line(series));
      if (!series.nearest) {
        lines.push('      no trace of this client to this destination reports this metric');
        continue;
      }
      const diff = series.nearest.differences
        .map(
          (d) => `${d.label} ${JSON.stringify(d.observed)} (configuration: ${JSON.stringify(d.configured)})`,
        )
        .join(', ');
      lines.push(`      nearest: ${traceLine(series.nearest.request, series.nearest.trace)}`);
      lines.push(`      differs in ${diff}`);
    }
    lines.push('');
  }
  if (report.untraced.length > 0) {
    lines.push('not traced:');
    for (const series of report.untraced) {
      lines.push(line(series));
      lines.push(`      ${series.reason}`);
    }
    lines.push('');
  }
  return `${lines.join('\n')}`;
}

/** A rate with three significant digits (0.0123, 1.23, 123). */
function formatRate(perSecond: number): string {
  return Number(perSecond.toPrecision(3)).toString();
}
