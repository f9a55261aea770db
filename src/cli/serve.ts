/**
 * `kfmesh serve`: the console's JSON API over the paths' objects (the built-in example when none, or a live
 * cluster with --kubeconfig), on loopback by default; with --metrics or --prometheus, the traffic the mesh
 * reported is drawn over the graph and explained. When a watched file changes, the objects are read
 * again and served from then on; if they no longer load, the last good ones stay and the error is said.
 * Runs until SIGTERM or SIGINT (or `until`, for tests).
 */
import { messageOf } from '../model/errors.ts';
import { watch, type FSWatcher } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ConsoleModel } from '../console/api.ts';
import { Snapshot } from '../load/snapshot.ts';
import { parseManifests } from '../load/parse.ts';
import { observedMetrics, type MetricsFlags } from './explain.ts';
import { serveConsole, type ConsoleServer } from '../console/server.ts';
import {
  ExitCode,
  istioVersionFlag,
  runCommand,
  snapshotFrom,
  UsageError,
  type ClusterFlags,
  type Streams,
} from './io.ts';

export interface ServeFlags extends ClusterFlags, MetricsFlags {
  host: string;
  port: string;
  istioVersion?: string;
  clusterDomain: string;
  /** When the port is taken, take a free one instead of failing (npm start). */
  anyPortIfTaken?: boolean;
  /** Documents to serve instead of files, under their names (npm start: the README's walkthrough). */
  documents?: readonly { name: string; text: string }[];
}

export function serveCommand(
  paths: string[],
  flags: ServeFlags,
  streams: Streams,
  until?: Promise<void>,
): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const port = Number(flags.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(
        `--port must be a port number (0 picks a free one), got ${JSON.stringify(flags.port)}`,
      );
    if (paths.includes('-')) throw new UsageError('serve reads files, not standard input');
    istioVersionFlag(flags.istioVersion);
    const source =
      flags.documents !== undefined
        ? flags.documents.map((d) => d.name).join(' and ')
        : paths.length > 0
          ? paths.join(', ')
          : flags.kubeconfig
            ? `the cluster of ${flags.kubeconfig}`
            : '<example>';
    const load = loader(paths, flags, streams, source);
    const first = await load();
    const onError = (error: unknown) =>
      streams.stderr(`kfmesh: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    // Each kind of refused request is said once (a page retrying would otherwise fill the log).
    const refusals = new Set<string>();
    const onRefused = (reason: string) => {
      if (refusals.has(reason) || refusals.size >= 100) return;
      refusals.add(reason);
      streams.stderr(`kfmesh: refused a request: ${reason}\n`);
    };
    const served = await listenOn(port, flags, streams, (on) =>
      serveConsole(first, flags.host, on, onError, onRefused),
    );
    const host = served.address.family === 'IPv6' ? `[${served.address.address}]` : served.address.address;
    streams.stderr(`kfmesh: the console of ${source} is at http://${host}:${served.address.port}/\n`);
    if (!isLoopback(flags.host)) streams.stderr(notLoopbackWarning(flags.host));
    // The first page load needs the graphs: compute them now rather than when it asks.
    const warm = (model: ConsoleModel) => {
      const start = performance.now();
      try {
        model.warm();
        streams.stderr(`kfmesh: graphs and findings ready in ${Math.round(performance.now() - start)} ms\n`);
      } catch (error) {
        onError(error);
      }
    };

    const warming = setImmediate(() => warm(first));

    const watching = reloadOnChange(
      flags.metrics !== undefined ? [...paths, flags.metrics] : paths,
      async () => {
        const model = await load();
        served.replace(model);
        streams.stderr(`kfmesh: reloaded ${source}\n`);
        warm(model);
      },
      streams,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
      void until?.then(resolve);
    });
    watching.close();
    clearImmediate(warming);
    await served.close();
    return ExitCode.Ok;
  });
}

/** Loads the console's model: the objects, and the observed metrics when asked for (read again on reload). */
function loader(
  paths: string[],
  flags: ServeFlags,
  streams: Streams,
  source: string,
): () => Promise<ConsoleModel> {
  const observing = flags.metrics !== undefined || flags.prometheus !== undefined;
  // Read again on reload (a metrics file is watched too; Prometheus is asked again).
  return async () => {
    const observed = observing ? await observedMetrics(flags) : undefined;
    const snapshot = flags.documents
      ? new Snapshot(flags.documents.flatMap((d) => parseManifests(d)))
      : await snapshotFrom(paths, streams, flags);
    return new ConsoleModel(snapshot, {
      source,
      clusterDomain: flags.clusterDomain,
      // Loaded again on reload: certificates are judged at the time of each load.
      now: new Date(),
      ...(flags.istioVersion ? { istioVersion: flags.istioVersion } : {}),
      ...(observed ? { observed } : {}),
    });
  };
}

/**
 * Listens with `listen`, as the flags allow: a port that is taken or refused is a usage error, unless
 * `anyPortIfTaken` (npm start) lets it take a free one.
 */
function listenOn(
  on: number,
  flags: ServeFlags,
  streams: Streams,
  listen: (port: number) => Promise<ConsoleServer>,
): Promise<ConsoleServer> {
  return listen(on).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE' || error.code === 'EACCES') {
      if (flags.anyPortIfTaken && on !== 0) {
        streams.stderr(`kfmesh: port ${on} is taken; using a free one\n`);
        return listenOn(0, flags, streams, listen);
      }
      throw new UsageError(
        `can't listen on ${flags.host}:${on} (${error.code}): give another --port (0 picks a free one)`,
      );
    }
    if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND')
      throw new UsageError(`can't listen on ${flags.host} (${error.code}): give another --host`);
    throw error;
  });
}

/** Reloads when a watched file or folder changes (a burst of changes reloads once); a failed reload is said. */
function reloadOnChange(
  paths: readonly string[],
  reload: () => Promise<void>,
  streams: Streams,
): { close: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      reload().catch((error: unknown) =>
        streams.stderr(`kfmesh: reload failed, still serving the last good input: ${messageOf(error)}\n`),
      );
    }, 200);
  };
  const watchers: FSWatcher[] = paths.map((p) => watch(p, { recursive: true }, changed));
  return {
    close: () => {
      for (const w of watchers) w.close();
      clearTimeout(timer);
    },
  };
}

function notLoopbackWarning(host: string): string {
  return (
    `kfmesh: warning: --host ${host} is not a loopback address: the console has no authentication, ` +
    "and anyone who can reach this address can read what it shows (with --kubeconfig, the cluster's " +
    'configuration, ConfigMaps included). Keep it on 127.0.0.1 and reach it through something that ' +
    'authenticates, for example `kubectl port-forward` to a loopback-only console, or an SSH tunnel. ' +
    'It answers only requests addressed to an IP address, localhost or the --host name.\n'
  );
}

/** 127.0.0.0/8, ::1 and localhost. */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}
