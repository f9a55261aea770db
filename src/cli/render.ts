/** `kfmesh render`: prints the objects kfmesh would apply for the given state. */
import { formatObjectProblem } from '../model/errors.ts';
import { OutputFormat, serialize } from '../model/serialize.ts';
import { desiredState, MeshMode } from '../render/desired-state.ts';
import { ExitCode, oneOf, runCommand, snapshotFrom, UsageError, type Streams } from './io.ts';

/** Options of `kfmesh render` as parsed from the command line. */
export interface RenderFlags {
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
    if (mode === MeshMode.Ambient) {
      throw new UsageError(
        '--mode ambient: rendering for ambient mode is not available in this version yet; use --mode sidecar',
      );
    }
    const snapshot = await snapshotFrom(paths, streams);
    const result = desiredState(snapshot, {
      mode,
      clusterDomain: flags.clusterDomain,
      meshGateway: flags.meshGateway,
    });
    streams.stdout(serialize(result.objects, format));
    for (const problem of result.problems) streams.stderr(`kfmesh: ${formatObjectProblem(problem)}\n`);
    return result.problems.length > 0 ? ExitCode.CheckFailed : ExitCode.Ok;
  });
}
