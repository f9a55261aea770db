/**
 * The controller's manager, as controller-runtime calls it: everything that runs the controller in a
 * process. It serves Prometheus metrics and the health probes, takes part in leader election, starts the
 * controller (when leading, or at once without election), and stops it all cleanly on SIGTERM or SIGINT
 * (the current reconcile finishes, watches close, servers close). The command line only parses flags.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import type { MeshMode } from '../render/desired-state.ts';
import { Controller } from './controller.ts';
import { LeaderElector } from './leader.ts';
import { controllerMetrics, serveEndpoints, type BindAddress } from './operations.ts';

/** What the manager runs, as the flags gave it. */
export interface ManagerOptions {
  client: KubeClient;
  mode: MeshMode;
  namespaces: readonly string[];
  clusterDomain: string;
  watchTimeoutSeconds: number;
  workers: number;
  /** Where to serve /metrics, and /healthz and /readyz (undefined: not served). */
  metricsAt: BindAddress | undefined;
  probesAt: BindAddress | undefined;
  /** Leader election on this Lease, when several replicas run. */
  leaderElection?: { namespace: string; name: string };
  /** The controller's own Pod, for Events about it. */
  pod?: { namespace: string; name: string };
  /** Stops the manager as a signal would (for tests). */
  until?: Promise<void>;
}

/** A metrics or probe address that cannot be listened on (a usage error). */
export class ListenError extends Error {
  override name = 'ListenError';
}

/** How a run ended: `failed` when it must exit non-zero (a start that failed, a lost lease). */
export interface ManagerResult {
  reason: string;
  failed: boolean;
}

type Servers = Awaited<ReturnType<typeof serveEndpoints>>[];

/** Runs until a signal, `until`, a lost lease or a failed start. */
export async function runManager(options: ManagerOptions): Promise<ManagerResult> {
  const log = pino({ base: { component: 'kfmesh-controller' } }, pino.destination(2));
  const { client } = options;
  const elector = options.leaderElection
    ? new LeaderElector(client, {
        ...options.leaderElection,
        identity: `${hostname()}_${randomBytes(4).toString('hex')}`,
      })
    : undefined;
  const running = new Controller(client, {
    ...(elector ? { writeDeadline: () => elector.writeDeadline() } : {}),
    ...(options.pod ? { pod: options.pod } : {}),
    mode: options.mode,
    namespaces: [...options.namespaces],
    clusterDomain: options.clusterDomain,
    watchTimeoutSeconds: options.watchTimeoutSeconds,
    workers: options.workers,
    log: (level, message, fields) => log[level](fields ?? {}, message),
    onReconcile: (_owner, ms, error) => {
      metrics.reconciles.inc({ result: error === undefined ? 'success' : 'error' });
      metrics.reconcileSeconds.observe(ms / 1000);
    },
    onApply: (ms) => metrics.applySeconds.observe(ms / 1000),
  });
  // The callbacks above run only once the controller has started, after this.
  const metrics = controllerMetrics(() => running.queueDepth);
  const servers = await serveOperations(options, metrics, () =>
    // A replica standing by (not leading) is ready; a leader once every kind has listed and while no
    // kind's latest list has failed.
    elector !== undefined && !elector.leading ? undefined : running.notReady,
  );
  for (const s of servers) log.info({ address: `${s.address.address}:${s.address.port}` }, 'serving');
  // Signal handlers don't keep Node running, and at times nothing else does (every watch down, waiting
  // for its restart timer, without metrics or probe servers): this timer does, until the manager stops.
  const alive = setInterval(() => undefined, 60_000);
  const { stopped, lostLease } = stopSignals(options.until);
  log.info({ mode: options.mode, namespaces: options.namespaces, context: client.contextName }, 'starting');
  // A start that fails for an unexpected reason ends the process (exit 1, with the reason) rather than
  // leaving it alive and stuck; failures of the server are retried inside start().
  let starting: Promise<void> | undefined;
  let failure: string | undefined;
  let startFailed: (reason: string) => void = () => undefined;
  const failedToStart = new Promise<string>((resolve) => (startFailed = resolve));
  const start = () => {
    starting = running.start();
    starting.catch((error: unknown) => {
      failure = error instanceof Error ? error.message : String(error);
      log.error({ error: failure }, 'start failed');
      startFailed('start failed');
    });
  };
  leadThen(elector, log, (leading) => {
    metrics.isLeader.set(leading ? 1 : 0);
    if (leading) start();
    else lostLease();
  });
  const reason = await Promise.race([stopped, failedToStart]);
  log.info({ reason }, 'stopping');
  await elector?.stop();
  // stop() first: it also ends a start() still waiting for discovery or the first lists.
  await running.stop();
  await starting?.catch(() => undefined);
  await closeAll(servers);
  clearInterval(alive);
  log.info('stopped');
  log.flush();
  // Losing the lease is a failure: the replica exits and is restarted, as client-go's controllers do.
  return { reason, failed: reason === 'lost the leader lease' || failure !== undefined };
}

/**
 * Calls `leading(true)` once this replica leads, and `leading(false)` when it loses the lease. Without
 * election it is the only writer, so it leads from the start.
 */
function leadThen(
  elector: LeaderElector | undefined,
  log: pino.Logger,
  leading: (now: boolean) => void,
): void {
  if (!elector) {
    leading(true);
    return;
  }
  log.info({ identity: elector.identity }, 'waiting for the leader lease');
  void elector.run(
    () => {
      log.info({ identity: elector.identity }, 'leading');
      leading(true);
    },
    () => leading(false),
  );
}

/** Resolves with the reason to stop: SIGTERM, SIGINT, `until`, or the leader lease lost (`lostLease`). */
function stopSignals(until: Promise<void> | undefined): { stopped: Promise<string>; lostLease: () => void } {
  let lostLease: () => void = () => undefined;
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    void until?.then(() => resolve('stop'));
    lostLease = () => resolve('lost the leader lease');
  });
  return { stopped, lostLease };
}

/** Serves /metrics and the probes where the flags say; `notReady` says why /readyz fails, if it does. */
async function serveOperations(
  options: ManagerOptions,
  metrics: ReturnType<typeof controllerMetrics>,
  notReady: () => string | undefined,
): Promise<Servers> {
  const servers: Servers = [];
  await serve(servers, '--metrics-bind-address', options.metricsAt, {
    '/metrics': async () => ({
      code: 200,
      type: metrics.registry.contentType,
      body: await metrics.registry.metrics(),
    }),
  });
  await serve(servers, '--health-probe-bind-address', options.probesAt, {
    '/healthz': async () => ({ code: 200, type: 'text/plain', body: 'ok\n' }),
    '/readyz': async () => {
      const why = notReady();
      return why === undefined
        ? { code: 200, type: 'text/plain', body: 'ok\n' }
        : { code: 503, type: 'text/plain', body: `not ready: ${why}\n` };
    },
  });
  return servers;
}

/** Serves the routes at `at` (when given); a port that cannot be listened on closes the others and throws. */
async function serve(
  servers: Servers,
  flag: string,
  at: BindAddress | undefined,
  routes: Parameters<typeof serveEndpoints>[1],
): Promise<void> {
  if (!at) return;
  try {
    servers.push(await serveEndpoints(at, routes));
  } catch (error) {
    await closeAll(servers);
    throw new ListenError(
      `${flag}: cannot listen on ${at.host}:${at.port}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

function closeAll(servers: Servers): Promise<unknown> {
  return Promise.all(servers.map((s) => new Promise((r) => s.server.close(r))));
}
