/**
 * `npm start` as a user runs it: the console comes up on the example as the README's walkthrough leaves it
 * (the observed requests out of the mesh explained by KFM101, drift and failing edges among the findings),
 * and stopping npm (a SIGTERM to npm's own process, as a process manager or `kill` sends it) stops the
 * console too.
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
      const at = /the console of .+? is at (http:\/\/\S+)/.exec(stderr);
      if (at?.[1]) resolve(at[1]);
    });
    npm.once('exit', (code) => reject(new Error(`npm start exited (${code}): ${stderr}`)));
  });
  try {
    assert.ok(await serving(`${url}api/summary`), 'the console answers');
    // The README's story: a sidecar client's requests to a model leave the mesh (PassthroughCluster), the
    // metrics report them, and KFM101 explains them; the observed traffic's own findings are listed.
    const observed = (await (await fetch(`${url}api/observed`)).json()) as {
      edges: { source: string; target: string; series: { finding?: { code: string } }[] }[];
    };
    const out = observed.edges.find(
      (e) => e.source === 'kubeflow-user-example-com/curl-inside-mesh' && e.target === 'PassthroughCluster',
    );
    assert.ok(
      out?.series.some((s) => s.finding?.code === 'KFM101'),
      JSON.stringify(observed.edges),
    );
    const findings = (await (await fetch(`${url}api/findings`)).json()) as { findings: { code: string }[] };
    const codes = new Set(findings.findings.map((f) => f.code));
    for (const code of ['KFM101', 'KFM801', 'KFM802']) assert.ok(codes.has(code), `${code} listed`);
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
