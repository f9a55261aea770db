/** `kfmesh analyze`: the findings of every rule, as text, JSON or SARIF; exit 1 at or above `--fail-on`. */
import { formatLocation } from '../model/errors.ts';
import { describeRef } from '../model/object.ts';
import { istioCodes, type Finding } from '../model/finding.ts';
import { analyze, atOrAbove, findingsDocument, rules } from '../analyze/analyze.ts';
import { toSarif } from '../analyze/sarif.ts';
import { selectRules } from '../analyze/select.ts';
import { parseSuppression } from '../analyze/suppress.ts';
import { kubectlPatch } from '../analyze/patches.ts';
import {
  ExitCode,
  istioVersionFlag,
  nowFlag,
  oneOf,
  runCommand,
  snapshotFrom,
  RouteValues,
  versionNote,
  type ClusterFlags,
  type Streams,
} from './io.ts';
import { version } from './version.ts';

/** Options of `kfmesh analyze` as parsed from the command line. */
export interface AnalyzeFlags extends ClusterFlags {
  output: string;
  failOn: string;
  outputThreshold: string;
  analyzer: string[];
  suppress: string[];
  clusterDomain: string;
  now?: string;
  istioVersion?: string;
}

/** Runs `kfmesh analyze`. */
export function analyzeCommand(paths: string[], flags: AnalyzeFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const format = oneOf('-o', flags.output, ['text', 'json', 'sarif'] as const);
    // Levels as kfmesh writes them or as istioctl does (Error, Warning, Info).
    const failOn = oneOf('--fail-on', flags.failOn.toLowerCase(), [
      'error',
      'warning',
      'info',
      'never',
    ] as const);
    const threshold = oneOf('--output-threshold', flags.outputThreshold.toLowerCase(), [
      'error',
      'warning',
      'info',
    ] as const);
    const selection = flags.analyzer.length > 0 ? selectRules(rules, flags.analyzer) : undefined;
    const suppress = flags.suppress.map(parseSuppression);
    const now = nowFlag(flags.now);
    const snapshot = await snapshotFrom(paths, streams, flags, RouteValues.Findings);
    const istioVersion = istioVersionFlag(flags.istioVersion);
    streams.stderr(versionNote(snapshot, istioVersion));
    const findings = analyze(snapshot, {
      clusterDomain: flags.clusterDomain,
      now,
      ...(istioVersion ? { istioVersion } : {}),
      ...(selection ? { selection } : {}),
      suppress,
    });
    // As istioctl does, the exit code reads every finding and the threshold only what is printed.
    const shown = findings.filter((f) => atOrAbove(f, threshold));
    streams.stdout(
      format === 'json'
        ? findingsJson(shown)
        : format === 'sarif'
          ? `${JSON.stringify(toSarif(shown, rules, version), null, 2)}\n`
          : findingsText(shown),
    );
    return findings.some((f) => atOrAbove(f, failOn)) ? ExitCode.CheckFailed : ExitCode.Ok;
  });
}

function findingsJson(findings: readonly Finding[]): string {
  return `${JSON.stringify(findingsDocument(findings), null, 2)}\n`;
}

/** One block per finding: where, severity and code, the message, the fix, the evidence. */
function findingsText(findings: readonly Finding[]): string {
  const lines: string[] = [];
  for (const f of findings) {
    const where = f.location ? `${formatLocation(f.location)}: ` : '';
    const code = `${f.code}${f.istio ? ` (${istioCodes(f).join(', ')})` : ''}`;
    lines.push(`${where}${f.severity} ${code}: ${describeRef(f.object)}${f.field ? ` ${f.field}` : ''}`);
    lines.push(`  ${f.message}`);
    if (f.fix) lines.push(`  fix: ${f.fix}`);
    if (f.patch) lines.push(`  patch: ${kubectlPatch(f)}`);
    for (const e of f.evidence ?? []) lines.push(`  trace: ${e}`);
    lines.push('');
  }
  const count = (s: string) => findings.filter((f) => f.severity === s).length;
  lines.push(
    `${findings.length} findings: ${count('error')} errors, ${count('warning')} warnings, ${count('info')} infos`,
  );
  return `${lines.join('\n')}\n`;
}
