/**
 * The console in real Chromium, read at a glance and with observed traffic: the example platform opens on
 * a graph of namespaces (edges labelled with their counts) and a tap unfolds one; the seed's configuration
 * served with metrics (its published PassthroughCluster series, and the series of the fixed configuration,
 * which this one cannot produce) draws the observed traffic over the edges, marks the drift, and explains
 * an edge on a tap, with KFM101 and its fix. Screenshots go to KFMESH_SCREENSHOTS when set.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { toYaml } from '../../src/load/serialize.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { browserTestOptions } from '../browser.ts';
import { assertDrawnWell, graphState, open, tapOn, waitForText, withBrowser } from '../console-page.ts';
import { startServe } from '../serve-process.ts';
import { loadCase, seedAfter, seedBefore, seedExposition } from '../seed-metrics.ts';
import { projectRoot } from '../conformance/cases.ts';
import { exampleBeforeKserve014, ExampleIstioVersion } from '../../src/example/platform.ts';

const work = mkdtempSync(join(tmpdir(), 'kfmesh-e2e-observed-'));
const shots = process.env['KFMESH_SCREENSHOTS'] ?? join(work, 'screenshots');
mkdirSync(shots, { recursive: true });

/** The drawn edges' ends, labels and classes. */
function drawnEdges(
  page: Page,
): Promise<{ source: string; target: string; label?: string; classes: string }[]> {
  return page.evaluate(() => {
    interface EdgeLike {
      data(k: string): string | undefined;
      classes(): string[];
    }
    const cy = (
      globalThis as unknown as {
        kfmesh: { view: { cy: { edges(): { map<T>(f: (e: EdgeLike) => T): T[] } } } };
      }
    ).kfmesh.view.cy;
    return cy.edges().map((e) => ({
      source: e.data('source') ?? '',
      target: e.data('target') ?? '',
      ...(e.data('label') ? { label: e.data('label') } : {}),
      classes: e.classes().join(' '),
    }));
  });
}

/** The id of the drawn edge from `source` to `target`. */
function edgeId(page: Page, source: string, target: string): Promise<string> {
  return page.evaluate(
    ([s, t]) => {
      const cy = (
        globalThis as unknown as {
          kfmesh: {
            view: {
              cy: { edges(): { filter(f: (e: { data(k: string): string }) => boolean): { id(): string }[] } };
            };
          };
        }
      ).kfmesh.view.cy;
      return (
        cy
          .edges()
          .filter((e) => e.data('source') === s && e.data('target') === t)[0]
          ?.id() ?? ''
      );
    },
    [source, target] as const,
  );
}

describe('the console at a glance, with observed traffic', browserTestOptions(), () => {
  const chromium = withBrowser(work);
  const servers = chromium.servers;

  test('the example (as npm start serves it, with its metrics) opens on namespaces with labelled edges; a tap unfolds one', async () => {
    // What npm start serves: the example as the README's walkthrough leaves it, with its metrics.
    const files = exampleBeforeKserve014().map((d, i) => {
      const file = join(work, `example-${i}.yaml`);
      writeFileSync(file, d.text);
      return file;
    });
    const serving = await startServe(
      [
        ...files,
        '--istio-version',
        ExampleIstioVersion,
        '--metrics',
        join(projectRoot, 'examples/metrics/example.prom'),
      ],
      { warm: true, ms: 120_000 },
    );
    servers.push(serving);
    const api = (await (await fetch(`${serving.base}/api/graph?mode=sidecar`)).json()) as {
      graph: { nodes: { id: string; namespace?: string }[] };
    };
    const errors: string[] = [];
    const page = await open(chromium.browser(), serving, errors);
    const folded = await graphState(page);
    const namespaces = new Set(api.graph.nodes.flatMap((n) => (n.namespace ? [n.namespace] : [])));
    const outside = api.graph.nodes.filter((n) => n.namespace === undefined).length;
    assert.equal(folded.nodes.filter((n) => n.kind === 'namespace').length, namespaces.size);
    assert.equal(folded.nodes.length, namespaces.size + outside, 'one node a namespace, and those outside');
    const edges = await drawnEdges(page);
    assert.ok(edges.length > 0 && edges.length < 100, `${edges.length} edges between namespaces`);
    assert.ok(
      edges.every((e) => /^\d/.test(e.label ?? '')),
      'every edge between namespaces says how many requests take it',
    );
    const observed = edges.filter((e) => /\bobserved\b/.test(e.classes));
    assert.ok(observed.length > 0 && observed.every((e) => / req /.test(e.label ?? '')));
    assert.ok(
      edges.some(
        (e) =>
          e.source === 'namespace:ml-team' &&
          e.target === 'namespace:ml-research' &&
          /drift/.test(e.label ?? ''),
      ),
      "the example's drift series (a 200 where ml-research's policy denies) marks its edge",
    );
    assert.match((await page.textContent('#graph-stats')) ?? '', /namespaces folded/);
    await assertDrawnWell(page, 'namespaces');
    await page.screenshot({ path: join(shots, 'console-namespaces.png') });

    await tapOn(page, 'namespace:kubeflow-user-example-com', 'body');
    await page.waitForFunction(() =>
      (
        globalThis as unknown as { kfmesh: { view: { expanded: string[] | 'all' } } }
      ).kfmesh.view.expanded.includes('kubeflow-user-example-com'),
    );
    const unfolded = await graphState(page);
    const members = api.graph.nodes.filter((n) => n.namespace === 'kubeflow-user-example-com');
    assert.ok(members.length > 1);
    for (const m of members)
      assert.ok(
        unfolded.nodes.some((n) => n.id === m.id),
        `${m.id} is shown once its namespace is unfolded`,
      );
    assert.ok(!unfolded.nodes.some((n) => n.id === 'namespace:kubeflow-user-example-com'));
    assert.ok(
      unfolded.nodes.some((n) => n.id === 'namespace:kubeflow'),
      'the other namespaces stay folded',
    );
    await assertDrawnWell(page, 'unfolded');
    await page.screenshot({ path: join(shots, 'console-unfolded.png') });

    // The README's story: the client's requests out of the mesh, observed, explained by KFM101.
    await page.selectOption('#grouping', 'workloads');
    const client = 'kubeflow-user-example-com/curl-inside-mesh';
    await tapOn(page, await edgeId(page, client, 'PassthroughCluster'), '[data-testid="edge-details"]');
    await waitForText(page, '[data-testid="edge-series"]', 'KFM101');
    await assertDrawnWell(page, 'the observed edge out of the mesh selected');
    await page.screenshot({ path: join(shots, 'console-start-kfm101.png') });

    // Observed traffic as findings: drift and the failing edges, each shown on the graph from the list.
    await page.click('.tabs button[data-tab="findings"]');
    await page.waitForSelector('[data-testid="findings"] li');
    const drift = page.locator('[data-testid="findings"] li').filter({ hasText: 'KFM801' }).first();
    assert.match(
      (await drift.textContent()) ?? '',
      /ml-team\/income-predictor-00001-deployment → ml-research\/iris-raw-predictor: .*does not produce.*source_principal/,
    );
    assert.equal(await page.locator('[data-testid="findings"] li').filter({ hasText: 'KFM802' }).count(), 2);
    await drift.getByRole('button', { name: 'Show in graph' }).click();
    await waitForText(page, '#status', 'KFM801: the observed edge');
    const selected = await page.evaluate(() => {
      const view = (
        globalThis as unknown as {
          kfmesh: { view: { selectedEdge?: number; drawn: { edges: { source: string; target: string }[] } } };
        }
      ).kfmesh.view;
      const edge = view.selectedEdge === undefined ? undefined : view.drawn.edges[view.selectedEdge];
      return edge && `${edge.source} → ${edge.target}`;
    });
    assert.equal(selected, 'ml-team/income-predictor-00001-deployment → ml-research/iris-raw-predictor');
    await assertDrawnWell(page, 'a drift finding shown on the graph');
    await page.screenshot({ path: join(shots, 'console-observed-finding.png') });
    assert.deepEqual(errors, []);
  });

  test("the seed's metrics over its graph: the PassthroughCluster edge explained by KFM101, the fixed configuration's series as drift", async () => {
    const configuration = loadCase(seedBefore);
    const metrics = join(work, 'observed.prom');
    // The before window's PassthroughCluster series, and the after configuration's series to the local
    // gateway: this configuration cannot produce the second one.
    const afterSeries = seedExposition(loadCase(seedAfter), 40).split('\n').slice(1).join('\n');
    writeFileSync(metrics, `${seedExposition(configuration, 1200)}${afterSeries}`);
    const file = join(work, 'configuration.yaml');
    writeFileSync(file, toYaml(configuration.input as KubeObject[]));
    const serving = await startServe([file, '--istio-version', '1.20', '--metrics', metrics], {
      warm: true,
      ms: 120_000,
    });
    servers.push(serving);
    const errors: string[] = [];
    const page = await open(chromium.browser(), serving, errors);
    assert.match((await page.textContent('#source')) ?? '', /observed: .*observed\.prom/);
    assert.match((await page.textContent('#graph-stats')) ?? '', /observed: 1 series explained, 1 drift/);
    await page.selectOption('#grouping', 'workloads');
    const from = configuration.args[configuration.args.indexOf('--from') + 1] ?? '';
    const edges = await drawnEdges(page);
    const passthrough = edges.find((e) => e.source === from && e.target === 'PassthroughCluster');
    assert.ok(passthrough, JSON.stringify(edges));
    assert.match(passthrough.classes, /\bobserved\b/);
    assert.doesNotMatch(passthrough.classes, /\bdrift\b/);
    assert.match(passthrough.label ?? '', /^1\.2k req · 0% err$/);
    const drift = edges.filter((e) => /\bdrift\b/.test(e.classes));
    assert.equal(drift.length, 1, JSON.stringify(edges));
    assert.equal(drift[0]?.source, from);
    await assertDrawnWell(page, 'observed');
    await page.screenshot({ path: join(shots, 'console-observed.png') });

    await tapOn(page, await edgeId(page, from, 'PassthroughCluster'), '[data-testid="edge-details"]');
    await waitForText(page, '[data-testid="edge-series"]', 'KFM101');
    const details = (await page.textContent('[data-testid="edge-details"]')) ?? '';
    assert.match(details, /Observed: 1\.2k requests/);
    assert.match(details, /explained/);
    assert.match(details, /Fix: /);
    assert.match(details, /kubectl patch/);
    await page.screenshot({ path: join(shots, 'console-observed-edge.png') });

    await tapOn(page, await edgeId(page, drift[0]?.source ?? '', drift[0]?.target ?? ''), 'body');
    await waitForText(page, '[data-testid="edge-details"]', 'Drift');
    assert.match((await page.textContent('[data-testid="edge-series"]')) ?? '', /Differs: /);
    assert.deepEqual(errors, []);
  });
});
