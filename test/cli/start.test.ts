/**
 * `npm start` as a user runs it: the console comes up on the example, and stopping npm (a SIGTERM to
 * npm's own process, as a process manager or `kill` sends it) stops the console too.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { projectRoot } from '../conformance/cases.ts';

async function serving(url: string): Promise<boolean> {
  try {
    await (await fetch(url)).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

test('npm start serves the example, and stops when npm is stopped', async () => {
  const npm = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    npm.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const at = /the console of \S+ is at (http:\/\/\S+)/.exec(stderr);
      if (at?.[1]) resolve(at[1]);
    });
    npm.once('exit', (code) => reject(new Error(`npm start exited (${code}): ${stderr}`)));
  });
  try {
    assert.ok(await serving(`${url}api/summary`), 'the console answers');
    npm.kill('SIGTERM');
    // The console notices that npm is gone within a second; wait for it, up to a generous bound.
    for (let i = 0; i < 100 && (await serving(`${url}api/summary`)); i++)
      await new Promise((r) => setTimeout(r, 200));
    assert.equal(await serving(`${url}api/summary`), false, `still serving after npm stopped:\n${stderr}`);
  } finally {
    npm.kill('SIGKILL');
    // A console left running holds these pipes open: let go of them so that a failure ends the test.
    npm.stdout.destroy();
    npm.stderr.destroy();
  }
});
