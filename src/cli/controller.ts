/**
 * `kfmesh controller`: runs the controller against the cluster of a kubeconfig (or in-cluster), with
 * structured logs (pino, JSON lines on standard error), Prometheus metrics and health probes, until
 * SIGTERM or SIGINT, then stops cleanly (the current reconcile finishes, watches close).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { LeaderElector } from '../controller/leader.ts';
import { KubeClient } from '../kube/client.ts';
import { Controller } from '../controller/controller.ts';
import { controllerMetrics, parseBindAddress, serveEndpoints } from '../controller/operations.ts';
import { MeshMode } from '../render/desired-state.ts';
import { ExitCode, oneOf, runCommand, UsageError, type Streams } from './io.ts';

export interface ControllerFlags {
  kubeconfig?: string;
  context?: string;
  mode: string;
  namespace: string[];
  metricsBindAddress: string;
  healthProbeBindAddress: string;
  clusterDomain: string;
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  watchTimeout: string;
  workers: string;
}

/** Runs until a signal (or `until` resolves, for tests); exit 0 after a clean stop. */
export function controllerCommand(
  flags: ControllerFlags,
  streams: Streams,
  until?: Promise<void>,
): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const mode = oneOf('--mode', flags.mode, [MeshMode.Sidecar, MeshMode.Ambient] as const);
    const bind = (flag: string, value: string) => {
      try {
        return parseBindAddress(flag, value);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
    };
    const watchTimeoutSeconds = Number(flags.watchTimeout);
    if (!Number.isInteger(watchTimeoutSeconds) || watchTimeoutSeconds < 1)
      throw new UsageError(
        `--watch-timeout must be a whole number of seconds, got ${JSON.stringify(flags.watchTimeout)}`,
      );
    const workers = Number(flags.workers);
    if (!Number.isInteger(workers) || workers < 1 || workers > 64)
      throw new UsageError(
        `--workers must be a whole number from 1 to 64, got ${JSON.stringify(flags.workers)}`,
      );
    const metricsAt = bind('--metrics-bind-address', flags.metricsBindAddress);
    const probesAt = bind('--health-probe-bind-address', flags.healthProbeBindAddress);
    const log = pino({ base: { component: 'kfmesh-controller' } }, pino.destination(2));
    const client = KubeClient.fromKubeconfig(flags.kubeconfig, flags.context);
    const depth = { of: (): number => 0 };
    const metrics = controllerMetrics(() => depth.of());
    const elector = flags.leaderElect
      ? new LeaderElector(client, {
          namespace: flags.leaderElectionNamespace ?? process.env['POD_NAMESPACE'] ?? 'kfmesh-system',
          name: flags.leaderElectionId,
          identity: `${hostname()}_${randomBytes(4).toString('hex')}`,
        })
      : undefined;
    const podName = process.env['POD_NAME'];
    const podNamespace = process.env['POD_NAMESPACE'];
    const controller = new Controller(client, {
      ...(elector ? { writeDeadline: () => elector.writeDeadline() } : {}),
      ...(podName && podNamespace ? { pod: { namespace: podNamespace, name: podName } } : {}),
      mode,
      namespaces: flags.namespace,
      clusterDomain: flags.clusterDomain,
      watchTimeoutSeconds,
      workers,
      log: (level, message, fields) => log[level](fields ?? {}, message),
      onReconcile: (_owner, ms, error) => {
        metrics.reconciles.inc({ result: error === undefined ? 'success' : 'error' });
        metrics.reconcileSeconds.observe(ms / 1000);
      },
      onApply: (ms) => metrics.applySeconds.observe(ms / 1000),
    });
    depth.of = () => controller.queueDepth;
    const servers: Awaited<ReturnType<typeof serveEndpoints>>[] = [];
    const serve = async (flag: string, ...args: Parameters<typeof serveEndpoints>) => {
      try {
        servers.push(await serveEndpoints(...args));
      } catch (error) {
        await Promise.all(servers.map((s) => new Promise((r) => s.server.close(r))));
        throw new UsageError(
          `${flag}: cannot listen on ${args[0].host}:${args[0].port}: ${(error as Error).message}`,
        );
      }
    };
    if (metricsAt)
      await serve('--metrics-bind-address', metricsAt, {
        '/metrics': async () => ({
          code: 200,
          type: metrics.registry.contentType,
          body: await metrics.registry.metrics(),
        }),
      });
    if (probesAt)
      await serve('--health-probe-bind-address', probesAt, {
        '/healthz': async () => ({ code: 200, type: 'text/plain', body: 'ok\n' }),
        // A replica standing by (not leading) is ready; a leader once every kind has listed and while no
        // kind's latest list has failed. Otherwise the body says why.
        '/readyz': async () => {
          const why = elector !== undefined && !elector.leading ? undefined : controller.notReady;
          return why === undefined
            ? { code: 200, type: 'text/plain', body: 'ok\n' }
            : { code: 503, type: 'text/plain', body: `not ready: ${why}\n` };
        },
      });
    for (const s of servers) log.info({ address: `${s.address.address}:${s.address.port}` }, 'serving');
    // Signal handlers don't keep Node running, and at times nothing else does (every watch down, waiting
    // for its restart timer, without metrics or probe servers): this timer does, until the command stops.
    const alive = setInterval(() => undefined, 60_000);
    let lostLease: () => void = () => undefined;
    const stopped = new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
      void until?.then(() => resolve('stop'));
      lostLease = () => resolve('lost the leader lease');
    });
    log.info({ mode, namespaces: flags.namespace, context: client.contextName }, 'starting');
    let starting: Promise<void> | undefined;
    if (elector) {
      log.info({ identity: elector.identity }, 'waiting for the leader lease');
      void elector.run(
        () => {
          metrics.isLeader.set(1);
          log.info({ identity: elector.identity }, 'leading');
          starting = controller.start();
        },
        () => {
          metrics.isLeader.set(0);
          lostLease();
        },
      );
    } else starting = controller.start();
    // A start that fails for an unexpected reason ends the process (exit 1, with the reason) rather than
    // leaving it alive and stuck; failures of the server are retried inside start().
    let failure: string | undefined;
    const failed = (error: unknown) => {
      failure = error instanceof Error ? error.message : String(error);
      log.error({ error: failure }, 'start failed');
      return 'start failed';
    };
    const reason = await Promise.race([stopped, starting?.then(() => stopped, failed) ?? stopped]);
    log.info({ reason }, 'stopping');
    await elector?.stop();
    // stop() first: it also ends a start() still waiting for discovery or the first lists.
    await controller.stop();
    await starting?.catch(() => undefined);
    await Promise.all(servers.map((s) => new Promise((r) => s.server.close(r))));
    clearInterval(alive);
    log.info('stopped');
    log.flush();
    // Losing the lease is a failure: the replica exits and is restarted, as client-go's controllers do.
    return reason === 'lost the leader lease' || failure !== undefined ? ExitCode.CheckFailed : ExitCode.Ok;
  });
}
