/**
 * `kfmesh controller`: checks the flags and runs the controller's manager (controller/manager.ts) against
 * the cluster of a kubeconfig (or in-cluster), until SIGTERM or SIGINT.
 */
import { messageOf } from '../model/errors.ts';
import { KubeClient } from '../kube/client.ts';
import { ListenError, runManager } from '../controller/manager.ts';
import { parseBindAddress } from '../controller/operations.ts';
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
        throw new UsageError(messageOf(error));
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
    const podName = process.env['POD_NAME'];
    const podNamespace = process.env['POD_NAMESPACE'];
    try {
      const result = await runManager({
        client: KubeClient.fromKubeconfig(flags.kubeconfig, flags.context),
        mode,
        namespaces: flags.namespace,
        clusterDomain: flags.clusterDomain,
        watchTimeoutSeconds,
        workers,
        metricsAt: bind('--metrics-bind-address', flags.metricsBindAddress),
        probesAt: bind('--health-probe-bind-address', flags.healthProbeBindAddress),
        ...(flags.leaderElect
          ? {
              leaderElection: {
                namespace: flags.leaderElectionNamespace ?? podNamespace ?? 'kfmesh-system',
                name: flags.leaderElectionId,
              },
            }
          : {}),
        ...(podName && podNamespace ? { pod: { namespace: podNamespace, name: podName } } : {}),
        ...(until ? { until } : {}),
      });
      return result.failed ? ExitCode.CheckFailed : ExitCode.Ok;
    } catch (error) {
      if (error instanceof ListenError) throw new UsageError(error.message);
      throw error;
    }
  });
}
