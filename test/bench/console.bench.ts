/**
 * Console benchmark: time to the first interactive graph in real Chromium, for the example platform and for
 * a generated mesh of about 2,000 nodes (a Kubeflow platform of 400 Profiles and 1,200 InferenceServices),
 * from navigation start to the graph drawn and answering input (the page's own `interactiveMs`). The server
 * has computed its graphs before the page loads (`kfmesh serve` does so when it starts: that time is shown
 * too). Median, fastest and slowest of several page loads in one browser. Skipped without Chromium.
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toYaml } from '../../src/model/serialize.ts';
import { browserMissing, launchBrowser } from '../browser.ts';
import { startServe, stopServe } from '../serve-process.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';
import { printTable } from './harness.ts';

interface Ready {
  interactiveMs: number;
  nodes: number;
  edges: number;
  drawnEdges: number;
}

const loads = Number(process.env['KFMESH_BENCH_LOADS'] ?? 7);

async function measure(name: string, args: string[]): Promise<(string | number)[]> {
  const served = await startServe(args, { warm: true, ms: 300_000 });
  const browser = await launchBrowser();
  try {
    const warm = /graphs and findings ready in (\d+) ms/.exec(served.log())?.[1] ?? '?';
    const times: number[] = [];
    let ready: Ready | undefined;
    for (let i = 0; i < loads; i++) {
      const page = await browser.newPage({ viewport: { width: 1600, height: 950 } });
      await page.goto(`${served.base}/`);
      await page.waitForSelector('body[data-graph-ready]', { timeout: 120_000 });
      ready = await page.evaluate(() => (globalThis as unknown as { kfmesh: { ready: Ready } }).kfmesh.ready);
      times.push(ready.interactiveMs);
      await page.close();
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)] as number;
    return [
      name,
      ready?.nodes ?? 0,
      `${ready?.edges ?? 0} (${ready?.drawnEdges ?? 0} drawn)`,
      Math.round(median),
      Math.round(times[0] as number),
      Math.round(times.at(-1) as number),
      `${warm} ms`,
    ];
  } finally {
    await browser.close();
    await stopServe(served);
  }
}

const missing = browserMissing();
if (missing) {
  console.log(`\nconsole benchmark skipped: it ${missing}`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-console-bench-'));
  try {
    const large = join(dir, 'mesh.yaml');
    writeFileSync(large, toYaml(kubeflowBenchPlatform(400, 1200)));
    const rows = [
      await measure('example platform', []),
      await measure('400 Profiles, 1,200 InferenceServices', [large]),
    ];
    printTable(
      `Console: time to the first interactive graph (sidecar mode), ${loads} page loads each in Chromium (goal < 2,000 ms)`,
      ['platform', 'nodes', 'edges', 'median ms', 'fastest ms', 'slowest ms', 'server: graphs computed in'],
      rows,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
