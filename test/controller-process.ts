/** `kfmesh controller` as a child process for the cluster tests, and waiting for what it should do. */
import { spawn, type ChildProcess } from 'node:child_process';
import { kfmeshBin } from './cli-process.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A replica with leader election in `kfmesh-system`, without metrics or probe servers. */
export const leaderArgs: readonly string[] = [
  '--leader-elect',
  '--leader-election-namespace',
  'kfmesh-system',
  '--metrics-bind-address',
  '0',
  '--health-probe-bind-address',
  '0',
];

/** No metrics or probe servers (each test process may run several controllers). */
export const noServerArgs: readonly string[] = [
  '--metrics-bind-address',
  '0',
  '--health-probe-bind-address',
  '0',
];

/** Waits until the controller's log has a line with this message (`msg`). */
export function logged(
  running: RunningController,
  message: string,
  options: { ms?: number } = {},
): Promise<true> {
  return eventually(
    `the log line "${message}"`,
    () => (running.log().includes(`"msg":"${message}"`) ? true : undefined),
    { ...options, context: () => running.log() },
  );
}

/** A running controller: its process and what it has logged so far (JSON lines). */
export interface RunningController {
  process: ChildProcess;
  log(): string;
  /** SIGTERM, then its exit code. */
  terminate(): Promise<number | null>;
}

/** Starts `kfmesh controller --kubeconfig FILE ARGS...` (with `nodeArgs` for Node itself, such as --cpu-prof). */
export function startController(
  kubeconfig: string,
  args: readonly string[],
  nodeArgs: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): RunningController {
  let log = '';
  const child = spawn(
    process.execPath,
    [...nodeArgs, kfmeshBin, 'controller', '--kubeconfig', kubeconfig, ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    },
  );
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  return {
    process: child,
    log: () => log,
    terminate: () => {
      if (child.exitCode !== null) return Promise.resolve(child.exitCode);
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      child.kill('SIGTERM');
      // A controller that does not end within 30 s is killed, and the test sees no exit code (null).
      const stuck = setTimeout(() => child.kill('SIGKILL'), 30_000);
      return exited.then((code) => {
        clearTimeout(stuck);
        return code;
      });
    },
  };
}

/**
 * Polls `check` until it returns a value (errors count as not yet), or fails after `ms` with `context()`
 * (for example the controller's log) in the message.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  options: { ms?: number; context?: () => string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.ms ?? 30_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}${last ? `: ${String(last)}` : ''}${options.context ? `\n${options.context().slice(-3000)}` : ''}`,
      );
    await sleep(200);
  }
}
