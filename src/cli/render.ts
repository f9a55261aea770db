/** `kfmesh render`: prints the objects kfmesh would apply for the given state. */
import { formatObjectProblem, formatProblem } from '../model/errors.ts';
import type { Finding } from '../model/finding.ts';
import { OutputFormat, serialize } from '../load/serialize.ts';
import { desiredState, MeshMode } from '../render/desired-state.ts';
import { ExitCode, oneOf, runCommand, snapshotFrom, type ClusterFlags, type Streams } from './io.ts';

/** Options of `kfmesh render` as parsed from the command line. */
export interface RenderFlags extends ClusterFlags {
  mode: string;
  output: string;
  clusterDomain: string;
  meshGateway: boolean;
}

/** Runs `kfmesh render`. Exit 0, or 1 when some objects could not be rendered (the rest are printed). */
export function renderCommand(paths: string[], flags: RenderFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const mode = oneOf('--mode', flags.mode, Object.values(MeshMode));
    const format = oneOf('-o', flags.output, Object.values(OutputFormat));
    const snapshot = await snapshotFrom(paths, streams, flags);
    const result = desiredState(snapshot, {
      mode,
      clusterDomain: flags.clusterDomain,
      meshGateway: flags.meshGateway,
    });
    streams.stdout(serialize(result.objects, format));
    for (const problem of result.problems) streams.stderr(`kfmesh: ${formatObjectProblem(problem)}\n`);
    for (const finding of result.findings)
      streams.stderr(`kfmesh: ${finding.severity}: ${formatFinding(finding)}\n`);
    return result.problems.length > 0 ? ExitCode.CheckFailed : ExitCode.Ok;
  });
}

/** One line for a finding: where, what, the code, and the fix. */
function formatFinding(finding: Finding): string {
  const context = {
    object: finding.object,
    ...(finding.location ? { location: finding.location } : {}),
    ...(finding.field ? { field: finding.field } : {}),
  };
  return `${formatProblem(context, finding.message)} [${finding.code}]${finding.fix ? `; fix: ${finding.fix}` : ''}`;
}
