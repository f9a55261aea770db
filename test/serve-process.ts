/** `kfmesh serve` as a child process on a free loopback port, for the API, browser and benchmark runs. */
import { spawn, type ChildProcess } from 'node:child_process';
import { kfmeshBin } from './cli-process.ts';
import { eventually } from './controller-process.ts';

export interface Serving {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT` */
  base: string;
  log: () => string;
}

/** Starts `kfmesh serve --port 0 ARGS...`; with `warm`, also waits until it has computed the graphs. */
export async function startServe(
  args: string[],
  options: { warm?: boolean; ms?: number } = {},
): Promise<Serving> {
  let log = '';
  const child = spawn(process.execPath, [kfmeshBin, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  const ms = options.ms ?? 60_000;
  const base = await eventually('the console address', () => /is at (http:\/\/[^/]+)\//.exec(log)?.[1], {
    ms,
    context: () => log,
  });
  if (options.warm)
    await eventually(
      'the graphs computed',
      () => (/graphs and findings ready/.test(log) ? true : undefined),
      {
        ms,
        context: () => log,
      },
    );
  return { child, base, log: () => log };
}

/** Stops it with SIGTERM; its exit code. */
export async function stopServe(s: Serving | undefined): Promise<number | null> {
  if (!s || s.child.exitCode !== null) return s?.child.exitCode ?? null;
  const exited = new Promise<number | null>((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  return exited;
}
