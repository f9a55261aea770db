/** What every command shares: reading inputs, writing output once, and turning failures into exit codes. */
import { readFile } from 'node:fs/promises';
import { formatObjectProblem, InputError, messageOf } from '../model/errors.ts';
import {
  formatIstioVersion,
  unmodelledVersion,
  parseIstioVersion,
  type IstioVersion,
} from '../mesh/istio-version.ts';
import { chooseIstioVersion, installedIstioVersion, type VersionChoice } from '../mesh/installed-version.ts';
import { loadPaths, readStandardInput, type NotManifests } from '../load/files.ts';
import { casesFileReason } from '../verify/cases.ts';
import { parseManifests } from '../load/parse.ts';
import { describeReplacement, Snapshot, summarizeReplacements } from '../load/snapshot.ts';
import { refOf, type KubeObject } from '../model/object.ts';
import { valueProblems } from '../analyze/route-values.ts';
import { formatFieldPath } from '../load/schema.ts';
import { examplePlatformYaml } from '../example/platform.ts';

/** Exit codes of the command-line contract. */
export const ExitCode = { Ok: 0, CheckFailed: 1, BadInput: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Where a command writes; tests pass their own. */
export interface Streams {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin?: () => Promise<string>;
  /** `-v`: notes in full rather than summed up. */
  verbose?: boolean;
}

/**
 * Text as a terminal should show it: control characters other than newline and tab (escape sequences, a
 * carriage return, C1 controls) and the bidirectional overrides written as `\xNN` or `\uNNNN`, so what an
 * object's author wrote cannot move the cursor, erase lines or reorder what the reader sees. JSON and
 * YAML output never hold them raw (both escape them), so only text output changes.
 */
export function printable(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A usage error (bad flag value): exit 2 with the message. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A live cluster as input: `--kubeconfig FILE` (and `--context NAME`). */
export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
}

/**
 * Loads a snapshot: a live cluster's objects when `--kubeconfig` is given, then the objects of the paths
 * (which replace the cluster's, as a planned change would); the built-in example platform when neither.
 */
export async function snapshotFrom(
  paths: readonly string[],
  streams: Streams,
  cluster: ClusterFlags = {},
  routeValues: RouteValues = RouteValues.Refused,
): Promise<Snapshot> {
  if (paths.length === 0 && !cluster.kubeconfig)
    return new Snapshot(parseManifests({ name: '<example>', text: examplePlatformYaml() }));
  const live = cluster.kubeconfig ? await clusterEntries(cluster.kubeconfig, cluster.context, streams) : [];
  const snapshot = new Snapshot([
    ...live,
    ...(paths.length > 0 ? await loadPaths(paths, streams.readStdin, notManifests(streams)) : []),
  ]);
  return checked(snapshot, streams, new Set(live.map((l) => l.object)), routeValues);
}

/**
 * What a route value the data plane cannot run (a regex that is not RE2, a negative weight) in a file is:
 * bad input (exit 2) for the commands that simulate the data plane, a finding (KFM423, KFM425) for `analyze`,
 * whose subject is what is wrong with a configuration (as `istioctl analyze` reports a schema error).
 */
export const RouteValues = { Refused: 'refused', Findings: 'findings' } as const;
export type RouteValues = (typeof RouteValues)[keyof typeof RouteValues];

/**
 * The snapshot once its problems are said: an object of the wrong type in a file, or one whose routes hold
 * a value the data plane cannot run (analyze/route-values.ts: a regex that is not RE2, a negative weight),
 * is bad input (the first one throws, exit 2); one read from a cluster (whose CRD is looser than kfmesh's schema) is left out with
 * a warning, so that the rest of a live cluster can still be read.
 */
function checked(
  snapshot: Snapshot,
  streams: Streams,
  live: ReadonlySet<KubeObject> = new Set(),
  routeValues: RouteValues = RouteValues.Refused,
): Snapshot {
  const [first] = snapshot.problems.filter((p) => !live.has(p.object));
  if (first) throw new InputError(first.context, first.message);
  for (const object of snapshot.all()) {
    if (live.has(object) || routeValues === RouteValues.Findings) continue;
    const [problem] = valueProblems(object);
    if (problem)
      throw new InputError(
        {
          location: snapshot.locate(object, problem.field),
          object: refOf(object),
          field: formatFieldPath(problem.field),
        },
        problem.message,
      );
  }
  for (const p of snapshot.problems) streams.stderr(`kfmesh: warning: ${formatObjectProblem(p)}; left out\n`);
  if (streams.verbose)
    for (const r of snapshot.replacements) streams.stderr(`kfmesh: note: ${describeReplacement(r)}\n`);
  else if (snapshot.replacements.length > 0)
    streams.stderr(`kfmesh: note: ${summarizeReplacements(snapshot.replacements)}; -v lists them\n`);
  return snapshot;
}

async function clusterEntries(kubeconfig: string, context: string | undefined, streams: Streams) {
  // Loaded only to read a cluster: the Kubernetes client library takes about 0.4 s and 70 MB to load,
  // which a command over files would otherwise pay every time.
  const [{ KubeClient }, { readCluster }] = await Promise.all([
    import('../kube/client.ts'),
    import('../load/cluster.ts'),
  ]);
  const client = KubeClient.fromKubeconfig(kubeconfig, context);
  const started = Date.now();
  try {
    const read = await readCluster(client);
    streams.stderr(
      `kfmesh: read ${read.entries.length} objects of ${read.kinds} kinds from ${read.source} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    return read.entries;
  } catch (error) {
    throw new InputError(
      { location: { file: kubeconfig } },
      `cannot read the cluster of context ${client.contextName}: ${messageOf(error)}`,
    );
  }
}

/** A cases file in a folder of manifests is skipped, with a note naming it. */
function notManifests(streams: Streams): NotManifests {
  return {
    why: casesFileReason,
    said: (file, why) => streams.stderr(`kfmesh: note: ${file}: skipped: ${why}\n`),
  };
}

/** Loads one path (a file, a folder, or - for standard input) as a snapshot of its own. */
export async function snapshotFromPath(path: string, streams: Streams): Promise<Snapshot> {
  return checked(new Snapshot(await loadPaths([path], streams.readStdin, notManifests(streams))), streams);
}

/** Runs a command body; input and usage errors become exit code 2 with one line on stderr. */
export async function runCommand(streams: Streams, body: () => Promise<ExitCode>): Promise<ExitCode> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof InputError || error instanceof UsageError) {
      streams.stderr(`kfmesh: ${error.message}\n`);
      return ExitCode.BadInput;
    }
    throw error;
  }
}

/** Checks that a flag's value is one of the allowed words. */
/**
 * `--istio-version X.Y`: the version it names; undefined when absent (the input's own version is then
 * simulated, see `versionNote`); a usage error otherwise.
 */
export function istioVersionFlag(text: string | undefined): IstioVersion | undefined {
  if (text === undefined) return undefined;
  const version = parseIstioVersion(text);
  if (!version) throw new UsageError(unmodelledVersion('--istio-version', text));
  return version;
}

/**
 * What a command tells on standard error about the Istio version it simulates, when no flag chose it:
 * the input's, else `observed` (what metrics report), else the newest modelled.
 */
export function versionNote(
  snapshot: Snapshot,
  given: IstioVersion | undefined,
  observed?: VersionChoice,
): string {
  if (given) return '';
  const { version, source } = installedIstioVersion(snapshot) ?? observed ?? chooseIstioVersion(snapshot);
  return `kfmesh: simulating Istio ${formatIstioVersion(version)} (${source}); --istio-version picks another\n`;
}

/** `--now TIME`: an RFC 3339 time (`2026-12-05T10:00:00Z`), the clock when absent; a usage error otherwise. */
export function nowFlag(text: string | undefined): Date {
  if (text === undefined) return new Date();
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
  const time = Date.parse(text);
  if (!rfc3339.test(text) || Number.isNaN(time))
    throw new UsageError(
      `--now must be an RFC 3339 time such as 2026-12-05T10:00:00Z, got ${JSON.stringify(text)}`,
    );
  return new Date(time);
}

export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

/**
 * The text of a file a flag names (`-`: standard input, where the flag allows it): a missing or unreadable
 * file is a usage error naming the flag.
 */
export async function readFlagFile(flag: string, file: string, streams?: Streams): Promise<string> {
  try {
    return file === '-' && streams
      ? await (streams.readStdin ?? readStandardInput)()
      : await readFile(file, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new UsageError(`${flag} ${file}: ${missing ? 'no such file' : messageOf(error)}`);
  }
}
