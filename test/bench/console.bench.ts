/**
 * Console benchmark: time to the first interactive graph in real Chromium, for the example platform, the real
 * Kubeflow platform (../shared/real) and a generated Kubeflow platform of 2,000 Profiles and 2,000
 * InferenceServices, and the time from asking for the Workloads grouping to its first frame,
 * from navigation start to the graph drawn and answering input (the page's own `interactiveMs`; the page
 * opens on its namespaces, so fewer nodes are drawn than the graph has). The server
 * has computed its graphs before the page loads (`kfmesh serve` does so when it starts: that time is shown
 * too). Median, fastest and slowest of several page loads in one browser, and the median against the same
 * page over an empty platform measured in the same run (this machine's speed varies a lot from hour to
 * hour; the ratio less). Skipped without Chromium.
 */
import { existsSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toYaml } from '../../src/load/serialize.ts';
import { browserMissing, launchBrowser } from '../browser.ts';
import type { Browser } from 'playwright-core';
import { startServe, stopServe, type Serving } from '../serve-process.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';
import { printTable } from './harness.ts';
import { projectRoot } from '../conformance/cases.ts';

const real = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');

interface Ready {
  interactiveMs: number;
  nodes: number;
  edges: number;
  drawnNodes: number;
  drawnEdges: number;
}

const loads = Number(process.env['KFMESH_BENCH_LOADS'] ?? 7);

/** One row per mode asked for: the page opened at `/` (sidecar) or `/#ambient`. */
async function measure(name: string, args: string[], modes = ['sidecar']): Promise<(string | number)[][]> {
  const served = await startServe(args, { warm: true, ms: 300_000 });
  const browser = await launchBrowser();
  try {
    const rows: (string | number)[][] = [];
    for (const mode of modes) rows.push(await loadTimes(browser, served, `${name}, ${mode}`, mode));
    return rows;
  } finally {
    await browser.close();
    await stopServe(served);
  }
}

async function loadTimes(
  browser: Browser,
  served: Serving,
  name: string,
  mode: string,
): Promise<(string | number)[]> {
  const warm = /graphs and findings ready in (\d+) ms/.exec(served.log())?.[1] ?? '?';
  const times: number[] = [];
  const unfolds: number[] = [];
  let ready: Ready | undefined;
  for (let i = 0; i < loads; i++) {
    const page = await browser.newPage({ viewport: { width: 1600, height: 950 } });
    await page.goto(`${served.base}/${mode === 'ambient' ? '#ambient' : ''}`);
    await page.waitForSelector('body[data-graph-ready]', { timeout: 120_000 });
    ready = await page.evaluate(() => (globalThis as unknown as { kfmesh: { ready: Ready } }).kfmesh.ready);
    times.push(ready.interactiveMs);
    // The Workloads grouping: every namespace unfolded, until its first frame is drawn.
    unfolds.push(
      await page.evaluate(async () => {
        const view = (globalThis as unknown as { kfmesh: { view: { setGrouping(g: string): void } } }).kfmesh
          .view;
        const start = performance.now();
        view.setGrouping('workloads');
        const frame = (globalThis as unknown as { requestAnimationFrame(f: () => void): void })
          .requestAnimationFrame;
        await new Promise<void>((done) => frame(() => frame(done)));
        return performance.now() - start;
      }),
    );
    await page.close();
  }
  times.sort((a, b) => a - b);
  unfolds.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] as number;
  return [
    name,
    `${ready?.nodes ?? 0} (${ready?.drawnNodes ?? 0} drawn)`,
    `${ready?.edges ?? 0} (${ready?.drawnEdges ?? 0} drawn)`,
    Math.round(median),
    Math.round(times[0] as number),
    Math.round(times.at(-1) as number),
    Math.round(unfolds[Math.floor(unfolds.length / 2)] as number),
    `${warm} ms`,
  ];
}

const missing = browserMissing();
if (missing) {
  console.log(`\nconsole benchmark skipped: it ${missing}`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-console-bench-'));
  try {
    const large = join(dir, 'mesh.yaml');
    writeFileSync(large, toYaml(kubeflowBenchPlatform(2000, 2000)));
    const empty = join(dir, 'empty.yaml');
    writeFileSync(empty, 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: empty\n');
    // The same page over an empty platform: what loading the page costs on this machine now, without a graph.
    const [baseline] = (await measure('empty platform (the page alone)', [empty])) as [(string | number)[]];
    const rows = [
      baseline,
      ...(await measure('example platform', [], ['sidecar', 'ambient'])),
      ...(existsSync(real) ? await measure('the real Kubeflow platform (master)', [real]) : []),
      ...(await measure('2,000 Profiles, 2,000 InferenceServices', [large], ['sidecar', 'ambient'])),
    ].map((row) => [...row, (Number(row[3]) / Number(baseline[3])).toFixed(2)]);
    printTable(
      `Console: time to the first interactive graph, ${loads} page loads each in Chromium (goal < 2,000 ms)`,
      [
        'platform',
        'nodes (drawn)',
        'edges',
        'median ms',
        'fastest ms',
        'slowest ms',
        'Workloads grouping, median ms',
        'server: graphs computed in',
        'median / empty page',
      ],
      rows,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
