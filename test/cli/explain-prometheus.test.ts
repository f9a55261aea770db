/**
 * `kfmesh explain --prometheus` against a real Prometheus (Debian's `prometheus`, or KFMESH_PROMETHEUS),
 * started on loopback with a scrape configuration pointing at a test server that serves the seed's
 * exposition text, its counter growing at every scrape. Skipped with the reason where Prometheus or the
 * seed is absent; under CI=true that fails (`.ci/run` installs Prometheus).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { freePort, onPath, partTestOptions } from '../kube-apiserver.ts';
import { loadCase, seedBefore, seedExposition, seedMissing } from '../seed-metrics.ts';
import { startServe, stopServe } from '../serve-process.ts';

const prometheusBin = process.env['KFMESH_PROMETHEUS'] ?? onPath('prometheus');
const missing =
  prometheusBin && existsSync(prometheusBin)
    ? seedMissing
    : 'needs Prometheus (apt-get install prometheus, as .ci/run does, or KFMESH_PROMETHEUS)';

describe('kfmesh explain --prometheus, a real Prometheus', partTestOptions('Prometheus', missing), () => {
  let target: Server;
  let prometheus: ChildProcess;
  let url = '';
  let dir = '';
  let log = '';

  before(async () => {
    let scrapes = 0;
    target = createServer((_request, response) => {
      scrapes++;
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      response.end(seedExposition(loadCase(seedBefore), 10 * scrapes));
    });
    await new Promise<void>((ready) => target.listen(0, '127.0.0.1', ready));
    const address = target.address();
    const targetPort = typeof address === 'object' && address ? address.port : 0;
    dir = mkdtempSync(join(tmpdir(), 'kfmesh-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global: {scrape_interval: 1s, evaluation_interval: 1s}',
        'scrape_configs:',
        `- {job_name: mesh, honor_labels: true, static_configs: [{targets: ["127.0.0.1:${targetPort}"]}]}`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      prometheusBin ?? 'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    // Ready when the query kfmesh asks has a count: at least two scrapes of the growing counter.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const query = encodeURIComponent('increase(istio_requests_total[1m])');
        const answer = (await (await fetch(`${url}/api/v1/query?query=${query}`)).json()) as {
          data?: { result?: { value: [number, string] }[] };
        };
        if (Number(answer.data?.result?.[0]?.value[1] ?? 0) > 0) break;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`Prometheus did not report the series in 60 s:\n${log}`);
      await new Promise((wait) => setTimeout(wait, 500));
    }
  });

  after(() => {
    prometheus?.kill();
    target?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the seed's PassthroughCluster series, as Prometheus counts it, is KFM101's", () => {
    const configuration = writeManifest(loadCase(seedBefore).input, 'configuration.yaml');
    const ask = (...more: string[]) =>
      runKfmesh([
        'explain',
        configuration,
        '--prometheus',
        url,
        '--window',
        '1m',
        '--istio-version',
        '1.20',
        ...more,
      ]);
    const run = ask('-o', 'json');
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      summary: { explained: number };
      seconds?: number;
      causes: { finding?: { code: string }; total: number; series: { labels: Record<string, string> }[] }[];
    };
    assert.equal(report.summary.explained, 1);
    assert.equal(report.causes[0]?.finding?.code, 'KFM101');
    assert.ok((report.causes[0]?.total ?? 0) > 0);
    // Prometheus adds its own labels (instance, job): they are not the mesh's and are not compared.
    assert.equal(report.causes[0]?.series[0]?.labels['job'], 'mesh');
    assert.equal(report.seconds, 60, 'counts over a known window are rates too');
    const text = ask();
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /1 series, [0-9.e+]+ requests or connections \([0-9.e+-]+\/s\):/);
  });

  test("kfmesh serve --prometheus: the console's observed traffic, as Prometheus counts it, with rates", async () => {
    const configuration = writeManifest(loadCase(seedBefore).input, 'configuration.yaml');
    const served = await startServe(
      [configuration, '--prometheus', url, '--window', '1m', '--istio-version', '1.20'],
      { warm: true },
    );
    try {
      const observed = (await (await fetch(`${served.base}/api/observed`)).json()) as {
        seconds?: number;
        summary: { explained: number; drift: number };
        edges: { target: string; rate?: number; series: { finding?: { code: string } }[] }[];
      };
      assert.equal(observed.seconds, 60);
      assert.deepEqual(observed.summary, { explained: 1, drift: 0, untraced: 0 });
      const edge = observed.edges.find((e) => e.target === 'PassthroughCluster');
      assert.ok((edge?.rate ?? 0) > 0);
      assert.equal(edge?.series[0]?.finding?.code, 'KFM101');
    } finally {
      await stopServe(served);
    }
  });

  test('a query Prometheus refuses, and a Prometheus that does not answer: exit 2 with the reason', async () => {
    const configuration = writeManifest(loadCase(seedBefore).input, 'configuration.yaml');
    const refused = runKfmesh(['explain', configuration, '--prometheus', url, '--window', '0s']);
    assert.equal(refused.code, 2, refused.stdout);
    assert.match(refused.stderr, /Prometheus refused the query/);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const silent = runKfmesh(['explain', configuration, '--prometheus', closed]);
    assert.equal(silent.code, 2);
    assert.match(silent.stderr, /no answer/);
    assert.doesNotMatch(silent.stderr, /\n\s+at /);
  });
});
