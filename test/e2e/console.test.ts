/**
 * The console in real Chromium, against `kfmesh serve` as a process: the example platform's graph in both
 * modes; the seed's request traced before and after the fix, read from the hop table and the path on the
 * graph; a finding opened in the graph and as its object; an InferenceService's objects and the migration
 * report; and a platform whose names hold HTML and script, which must show as text and run nothing.
 * Screenshots go to KFMESH_SCREENSHOTS when set (docs/images come from there), else to a temporary folder.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { toYaml } from '../../src/load/serialize.ts';
import { projectRoot } from '../conformance/cases.ts';
import { browserTestOptions } from '../browser.ts';
import { startServe, type Serving } from '../serve-process.ts';
import { assertDrawnWell, graphState, open, tapOn, waitForText, withBrowser } from '../console-page.ts';

const work = mkdtempSync(join(tmpdir(), 'kfmesh-e2e-'));
const shots = process.env['KFMESH_SCREENSHOTS'] ?? join(work, 'screenshots');
mkdirSync(shots, { recursive: true });

/** A hop of the hop table: its cells as text (#, proxy, data plane, decision, response), and its details by name. */
interface HopRow {
  cells: string[];
  details: Record<string, string>;
}

function hopRows(page: Page): Promise<HopRow[]> {
  return page.$$eval('[data-testid="hop-table"] tbody tr', (rows) =>
    rows.map((r) => {
      const cells = [...r.querySelectorAll('td')];
      const names = [...r.querySelectorAll('.hop-details dt')].map((dt) => dt.textContent ?? '');
      const values = [...r.querySelectorAll('.hop-details dd')].map((dd) => dd.textContent ?? '');
      return {
        cells: cells.slice(0, 5).map((td) => td.textContent ?? ''),
        details: Object.fromEntries(names.map((n, i) => [n, values[i] ?? ''])),
      };
    }),
  );
}

async function traceIn(
  page: Page,
  request: { from: string; url: string; method: string; headers: string[]; istio?: string },
): Promise<void> {
  await page.fill('#trace-from', request.from);
  await page.fill('#trace-url', request.url);
  await page.selectOption('#trace-method', request.method);
  await page.fill('#trace-headers', request.headers.join('\n'));
  if (request.istio) await page.selectOption('#trace-istio', request.istio);
  const answered = page.waitForResponse((r) => r.url().includes('/api/trace'));
  await page.click('#trace-submit');
  await answered;
  await page.waitForSelector('[data-testid="hop-table"], [data-testid="trace-error"]');
}

/** A published trace case: its objects as a file to serve, and its request. */
function seedCase(file: string) {
  const c = parse(readFileSync(join(projectRoot, 'test/data/conformance/traces', file), 'utf8')) as {
    args: string[];
    input: KubeObject[];
  };
  const arg = (flag: string) => c.args[c.args.indexOf(flag) + 1] ?? '';
  const path = join(work, file);
  writeFileSync(path, toYaml(c.input));
  return {
    path,
    request: {
      from: arg('--from'),
      url: arg('--url'),
      method: arg('--method'),
      headers: c.args.filter((_, i) => c.args[i - 1] === '--header'),
      istio: arg('--istio-version'),
    },
  };
}

describe('the console in Chromium', browserTestOptions(), () => {
  const chromium = withBrowser(work);
  const servers = chromium.servers;
  const serve = async (args: string[]) => {
    const s = await startServe(args, { warm: true, ms: 120_000 });
    servers.push(s);
    return s;
  };
  /** Serves a published trace case at its Istio version, traces its request in the page, reads the hops. */
  const traceSeed = async (file: string) => {
    const { path, request } = seedCase(file);
    const errors: string[] = [];
    const page = await open(
      chromium.browser(),
      await serve([path, '--istio-version', request.istio]),
      errors,
    );
    await traceIn(page, request);
    return { page, request, rows: await hopRows(page), errors };
  };

  describe('on the example platform', () => {
    let serving: Serving;
    let page: Page;
    const errors: string[] = [];
    before(async () => {
      serving = await serve([]);
      page = await open(chromium.browser(), serving, errors);
    });

    test('draws the sidecar graph the API computed, then the ambient one on the toggle', async () => {
      const api = (await (await fetch(`${serving.base}/api/graph?mode=sidecar`)).json()) as {
        graph: {
          nodes: { id: string }[];
          edges: { allowed: number; denied: number; passthrough: number; blackhole: number }[];
        };
      };
      // The page opens on namespaces; the workloads are one choice away.
      assert.ok((await graphState(page)).nodes.some((n) => n.kind === 'namespace'));
      await page.selectOption('#grouping', 'workloads');
      const sidecar = await graphState(page);
      assert.equal(sidecar.mode, 'sidecar');
      assert.deepEqual(sidecar.nodes.map((n) => n.id).sort(), api.graph.nodes.map((n) => n.id).sort());
      const usual = api.graph.edges.filter((e) => e.allowed + e.passthrough + e.blackhole > 0);
      assert.equal(sidecar.drawnEdges, usual.length, 'edges with allowed requests or leaving the mesh');
      await page.selectOption('#edges', 'all');
      assert.equal((await graphState(page)).drawnEdges, api.graph.edges.length);
      await page.selectOption('#edges', 'denied');
      const denied = api.graph.edges.filter((e) => e.denied > 0).length;
      assert.ok(denied > 0);
      assert.equal((await graphState(page)).drawnEdges, denied);
      await page.selectOption('#edges', 'usual');
      assert.ok(sidecar.nodes.some((n) => n.kind === 'passthrough'));
      assert.match((await page.textContent('#graph-stats')) ?? '', /^sidecar: 29 nodes, \d+ edges/);
      await page.screenshot({ path: join(shots, 'console-sidecar.png') });

      await page.click('#mode-ambient');
      await page.waitForSelector('body[data-graph-ready="ambient"]');
      const ambient = await graphState(page);
      assert.equal(ambient.mode, 'ambient');
      assert.ok(
        ambient.nodes.some((n) => n.kind === 'waypoint'),
        'the ambient graph has waypoints',
      );
      assert.equal(await page.getAttribute('#mode-ambient', 'aria-pressed'), 'true');
      assert.ok(page.url().endsWith('/#ambient'), 'the address keeps the mode');
      await page.screenshot({ path: join(shots, 'console-ambient.png') });
      await page.click('#mode-sidecar');
      await page.waitForSelector('body[data-graph-ready="sidecar"]');
    });

    test('edge labels wait to be asked for; a clicked edge is highlighted, the rest faded, its label clear of every node; arrow keys move on', async () => {
      type Box = { x1: number; x2: number; y1: number; y2: number };
      const look = () =>
        page.evaluate(() => {
          type El = {
            id(): string;
            hasClass(c: string): boolean;
            style(p: string): string;
            renderedBoundingBox(o?: object): Box;
          };
          type Box = { x1: number; x2: number; y1: number; y2: number };
          const view = (
            globalThis as unknown as {
              kfmesh: {
                view: {
                  selectedEdge?: number;
                  cy: { edges(): { toArray(): El[] }; nodes(s: string): { toArray(): El[] } };
                };
              };
            }
          ).kfmesh.view;
          const edges = view.cy.edges().toArray();
          const nodes = view.cy.nodes('[kind]').toArray();
          const labelOnly = { includeNodes: false, includeEdges: false, includeLabels: true };
          return {
            selected: view.selectedEdge,
            labelled: edges.filter((e) => e.style('label') !== '').map((e) => e.id()),
            faded: edges.filter((e) => e.hasClass('faded')).length,
            chosen: edges
              .filter((e) => e.hasClass('selected-edge'))
              .map((e) => ({
                id: e.id(),
                width: parseFloat(e.style('width')),
                label: e.renderedBoundingBox(labelOnly),
              })),
            widest: Math.max(
              ...edges.filter((e) => !e.hasClass('selected-edge')).map((e) => parseFloat(e.style('width'))),
            ),
            nodes: nodes.map((n) => n.renderedBoundingBox({ includeLabels: false })),
            ids: edges.map((e) => e.id()),
          };
        });
      const before = await look();
      assert.deepEqual(before.labelled, [], 'no edge label until one is asked for');
      const target = { id: before.ids[0] ?? '' };
      // A click on a point of the edge clear of the nodes and the other edges.
      await tapOn(page, target.id, '[data-testid="edge-details"]');
      const after = await look();
      assert.equal(`edge:${after.selected}`, target.id, 'the click selected the edge under the pointer');
      const [chosen] = after.chosen;
      assert.ok(chosen && chosen.id === target.id);
      assert.ok(chosen.width > after.widest, 'the selected edge is drawn wider than every other');
      assert.ok(after.faded > 0, 'the other edges fade');
      assert.deepEqual(after.labelled, [target.id], 'the selected edge alone shows its label');
      const overlaps = (a: Box, b: Box) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
      assert.ok(!after.nodes.some((n) => overlaps(chosen.label, n)), 'the label covers no node');
      // The keyboard moves the selection from edge to edge.
      await page.focus('#graph');
      await page.keyboard.press('ArrowRight');
      const next = await look();
      assert.notEqual(next.selected, after.selected);
      assert.equal(next.chosen.length, 1);
      await page.keyboard.press('Escape');
      assert.equal((await look()).selected, undefined);
      // "Labels" shows every edge's counts.
      await page.check('#labels');
      assert.ok((await look()).labelled.length > 1);
      await page.uncheck('#labels');
      await page.click('.tabs button[data-tab="tracer"]');
    });

    test('search marks nodes; a namespace filter hides the rest; a tap focuses a node', async () => {
      await page.fill('#search', 'sklearn-iris');
      const searched = await graphState(page);
      assert.ok(searched.matched.length > 0);
      // The nodes themselves, or the folded namespace that holds them.
      assert.ok(
        searched.matched.every(
          (id) => id.includes('sklearn-iris') || id === 'namespace:kubeflow-user-example-com',
        ),
        searched.matched.join(', '),
      );
      assert.match((await page.textContent('#search-count')) ?? '', /^\d+ found$/);
      await page.click('#clear');
      await page.selectOption('#namespace', 'ml-team');
      const hidden = await page.evaluate(
        () =>
          (
            globalThis as unknown as { kfmesh: { view: { cy: { nodes(s: string): { length: number } } } } }
          ).kfmesh.view.cy.nodes('.hidden').length,
      );
      assert.ok(hidden > 0, 'nodes outside ml-team and its peers are hidden');
      await page.selectOption('#namespace', '');

      const id = 'kubeflow-user-example-com/curl-inside-mesh';
      // Its namespace unfolded, as a tap on it would.
      await page.evaluate(() =>
        (globalThis as unknown as { kfmesh: { view: { expand(n: string): void } } }).kfmesh.view.expand(
          'kubeflow-user-example-com',
        ),
      );
      // A click on the canvas (cytoscape's tap); the details must then name the node.
      await tapOn(page, id, '[data-testid="node-details"]');
      assert.match((await page.textContent('[data-testid="node-details"] h3')) ?? '', new RegExp(`${id}$`));
      const focused = await page.evaluate(
        () =>
          (
            globalThis as unknown as { kfmesh: { view: { cy: { nodes(s: string): { length: number } } } } }
          ).kfmesh.view.cy.nodes('.faded').length,
      );
      assert.ok(focused > 0, 'nodes that are not its neighbours fade');
      await page.click('#clear');
      await page.click('.tabs button[data-tab="tracer"]');
    });

    test('a finding: shown on the graph and as its object', async () => {
      await page.click('.tabs button[data-tab="findings"]');
      await page.waitForSelector('[data-testid="findings"] li');
      const first = page
        .locator('[data-testid="findings"] li')
        .filter({ hasText: /VirtualService / })
        .first();
      const text = (await first.textContent()) ?? '';
      const namespace = /VirtualService ([^/]+)\//.exec(text)?.[1];
      assert.ok(namespace, `the finding names its object: ${text}`);
      await first.getByText('Show in graph').click();
      const marked = await graphState(page);
      assert.ok(marked.matched.length > 0);
      assert.ok(marked.matched.every((id) => id.startsWith(`${namespace}/`)));
      await page.screenshot({ path: join(shots, 'console-finding.png') });
      await first.getByText('Show object').click();
      await page.waitForSelector('[data-testid="object-yaml"]');
      const yaml = (await page.textContent('[data-testid="object-yaml"]')) ?? '';
      assert.match(yaml, /kind: VirtualService/);
      assert.match(yaml, new RegExp(`namespace: ${namespace}`));
    });

    test("an InferenceService's objects in each mode, and the migration report", async () => {
      await page.click('.tabs button[data-tab="objects"]');
      await page.selectOption('#owner', 'InferenceService/kubeflow-user-example-com/sklearn-iris');
      await page.waitForSelector('[data-testid="objects-yaml"]');
      const sidecar = (await page.textContent('[data-testid="objects-yaml"]')) ?? '';
      assert.match(sidecar, /kind: VirtualService/);
      assert.match(sidecar, /- mesh/);
      await page.click('#mode-ambient');
      await page.waitForSelector('[data-testid="objects-yaml"]');
      await waitForText(page, '#objects-out h3', 'in ambient mode');
      await page.click('#mode-sidecar');
      await page.click('#migration');
      await page.waitForSelector('[data-testid="migration-report"]');
      assert.match((await page.textContent('[data-testid="migration-summary"]')) ?? '', /converted/);
      await page.screenshot({ path: join(shots, 'console-migration.png') });
      await page.click('.tabs button[data-tab="tracer"]');
    });

    test('the migration plan: progress while the server computes it, then a step slider over the graph', async (t) => {
      const asked = performance.now();
      await page.click('#mode-plan');
      await page.waitForSelector('[data-testid="plan-progress"]');
      t.diagnostic(`progress shown ${Math.round(performance.now() - asked)} ms after the plan was asked for`);
      // While the page shows progress the plan is still being computed, and the server answers meanwhile.
      assert.equal((await fetch(`${serving.base}/api/plan`)).status, 202);
      assert.equal((await fetch(`${serving.base}/api/summary`)).status, 200);
      assert.match(
        (await page.textContent('[data-testid="plan-doing"]')) ?? '',
        /^Planning the move to ambient mode/,
      );
      await waitForText(page, '#status', 'planning: ');
      await page.waitForSelector('body[data-graph-ready="plan"]', { timeout: 120_000 });
      const api = (await (await fetch(`${serving.base}/api/plan`)).json()) as {
        steps: { number: number; stage: string; warnings: number }[];
        errors: number;
      };
      assert.match((await page.textContent('#plan-label')) ?? '', /^step 0 of \d+$/);
      assert.match((await page.textContent('#graph-stats')) ?? '', /^plan: the start \(step 0 of \d+\)/);
      assert.equal(await page.getAttribute('#plan-step', 'max'), String(api.steps.length));
      assert.match(
        (await page.textContent('[data-testid="plan-summary"]')) ?? '',
        /0 errors, 0 requests in outage windows/,
      );
      assert.match((await page.textContent('[data-testid="plan-windows"]')) ?? '', /^None/);
      const restart = api.steps.find((s) => s.stage === 'restart')?.number ?? 0;
      assert.ok(restart > 0);
      await page.$eval(
        '#plan-step',
        (input, value) => {
          (input as unknown as { value: string }).value = value;
          input.dispatchEvent(new Event('input'));
        },
        String(restart),
      );
      await page.waitForSelector('body[data-graph-ready="plan"]');
      await waitForText(page, '#graph-stats', 'Pods restart without sidecars');
      const changed = await page.evaluate(
        () =>
          (globalThis as unknown as { kfmesh: { view: { changedEdges: number } } }).kfmesh.view.changedEdges,
      );
      assert.ok(changed > 0, 'the restart changes edges, and they are marked');
      assert.match((await page.textContent('#graph-stats')) ?? '', new RegExp(`: ${changed} edges changed`));
      assert.equal(await page.getAttribute('.plan-steps li.current button', 'data-step'), String(restart));
      await assertDrawnWell(page, 'the plan at its restart step');

      // A step in the list is a button that shows its state.
      await page.click('.plan-steps button[data-step="1"]');
      await waitForText(page, '#plan-label', 'step 1 of');
      await page.waitForSelector('body[data-graph-ready="plan"]');
      assert.equal(await page.getAttribute('.plan-steps li.current button', 'data-step'), '1');
      // Quick arrow presses on the slider: none is dropped, the last one is the step shown.
      await page.focus('#plan-step');
      for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
      await waitForText(page, '#plan-label', 'step 4 of');
      await page.waitForSelector('body[data-graph-ready="plan"]');
      assert.equal(await page.inputValue('#plan-step'), '4');
      assert.match((await page.textContent('#plan-label')) ?? '', /^step 4 of/);
      // The step's differences against the start can be read and filtered by severity.
      const busiest = [...api.steps].sort((a, b) => b.warnings - a.warnings)[0] ?? api.steps[0];
      assert.ok(busiest);
      await page.click(`.plan-steps button[data-step="${busiest.number}"]`);
      await waitForText(page, '#plan-label', `step ${busiest.number} of`);
      await page.waitForSelector('body[data-graph-ready="plan"]');
      await assertDrawnWell(page, 'the plan at its busiest step');
      await page.screenshot({ path: join(shots, 'console-plan.png') });
      await page.selectOption('[data-testid="plan-severity"]', 'warning');
      const severities = await page.$$eval(
        '[data-testid="plan-differences"] tbody tr td:first-child',
        (cells) => cells.map((c) => c.textContent ?? ''),
      );
      assert.ok(
        severities.every((s) => s === 'warning'),
        severities.join(','),
      );
      assert.match(
        (await page.textContent('[data-testid="plan-differences-count"]')) ?? '',
        new RegExp(`^${busiest.warnings} requests in `),
      );
      await page.click('#mode-sidecar');
      await page.waitForSelector('body[data-graph-ready="sidecar"]');
    });

    test('a link to #ambient opens the ambient graph; each namespace says its mode, and why it stays in sidecar mode', async () => {
      const other = await chromium.browser().newPage();
      try {
        await other.goto(`${serving.base}/#ambient`);
        await other.waitForSelector('body[data-graph-ready="ambient"]', { timeout: 60_000 });
        assert.equal(await other.getAttribute('#mode-ambient', 'aria-pressed'), 'true');
        const labels = await other.evaluate(() =>
          (
            globalThis as unknown as {
              kfmesh: {
                view: { cy: { nodes(s: string): { map<T>(f: (n: { data(k: string): string }) => T): T[] } } };
              };
            }
          ).kfmesh.view.cy
            .nodes('.namespace')
            .map((n) => n.data('label')),
        );
        assert.ok(
          labels.some((l) => /^ml-research \(\d+\)\nambient$/.test(l)),
          labels.join(' | '),
        );
        assert.ok(
          labels.some((l) => /^kubeflow-user-example-com \(\d+\)\nsidecar$/.test(l)),
          labels.join(' | '),
        );
        await tapOn(other, 'namespace:kubeflow-user-example-com', '#graph');
        await waitForText(
          other,
          '#status',
          'kubeflow-user-example-com: sidecar; stays in sidecar mode: it runs',
        );
        await other.screenshot({ path: join(shots, 'console-ambient-modes.png') });
      } finally {
        await other.close();
      }
    });

    test('no errors in the page, nothing loaded from elsewhere', () => {
      assert.deepEqual(errors, []);
    });
  });

  test("the seed's request before the fix: the in-mesh client goes to PassthroughCluster", async () => {
    const { page, request, rows, errors } = await traceSeed('01-kserve-vs-without-mesh-passthrough.yaml');
    // The client's sidecar sends it out of the mesh; it reaches the gateway anyway, which forwards it to
    // itself (the second pass the seed reported), then the model.
    assert.deepEqual(
      rows.map((r) => r.cells[1]?.split(' ')[0]),
      ['sidecar', 'gateway', 'gateway', 'sidecar'],
    );
    assert.deepEqual(
      rows.map((r) => r.cells[2]),
      ['sidecar', 'gateway', 'gateway', 'sidecar'],
      'each hop says which data plane it is',
    );
    assert.match(rows[0]?.cells[1] ?? '', new RegExp(`^sidecar ${request.from}$`));
    assert.match(rows[0]?.details['cluster → upstream'] ?? '', /PassthroughCluster/);
    assert.equal(rows[0]?.details['TLS'], 'plaintext');
    assert.match(
      rows[0]?.details['istio_requests_total'] ?? '',
      /destination_service_name\s*PassthroughCluster/,
    );
    assert.match(rows.at(-1)?.cells[4] ?? '', /^200/, 'the response column');
    // The table fits its panel, and no header breaks (each is one line high).
    const fit = await page.$eval('[data-testid="hop-table"]', (table) => {
      const t = table as unknown as {
        scrollWidth: number;
        parentElement: { clientWidth: number };
        querySelectorAll(s: string): { textContent: string; getClientRects(): { length: number } }[];
      };
      const lines = (th: { getClientRects(): { length: number } }) => th.getClientRects().length;
      return {
        width: t.scrollWidth,
        room: t.parentElement.clientWidth,
        broken: [...t.querySelectorAll('th')]
          .filter((th) => {
            const range = (
              globalThis as unknown as {
                document: {
                  createRange(): {
                    selectNodeContents(n: unknown): void;
                    getClientRects(): { length: number };
                  };
                };
              }
            ).document.createRange();
            range.selectNodeContents(th);
            return range.getClientRects().length > 1 || lines(th) > 1;
          })
          .map((th) => th.textContent),
      };
    });
    assert.ok(fit.width <= fit.room, `the hop table is ${fit.width} px wide in ${fit.room} px`);
    assert.deepEqual(fit.broken, [], 'headers on one line');
    assert.deepEqual((await graphState(page)).onPath.sort(), [request.from, 'PassthroughCluster'].sort());
    await assertDrawnWell(page, "the seed's request traced");
    await page.screenshot({ path: join(shots, 'console-trace-before.png') });
    assert.deepEqual(errors, []);
  });

  test("the seed's request after the fix: through the local gateway to the model, over mTLS", async () => {
    const { page, request, rows, errors } = await traceSeed('02-kserve-vs-with-mesh-local-gateway.yaml');
    assert.ok(rows.length >= 3, `client sidecar, gateway, model sidecar: ${JSON.stringify(rows)}`);
    assert.match(rows[1]?.cells[1] ?? '', /^gateway istio-system\//);
    assert.ok(
      rows.slice(1).every((r) => r.details['TLS']?.startsWith('mTLS')),
      'mTLS after the client sidecar',
    );
    assert.doesNotMatch(rows.map((r) => r.details['cluster → upstream']).join(' '), /PassthroughCluster/);
    const summary = (await page.textContent('[data-testid="trace-result"]')) ?? '';
    assert.match(summary, /response 200; answered by kserve-test\//);
    const state = await graphState(page);
    assert.ok(state.onPath.includes(request.from));
    assert.ok(state.onPath.some((id) => id.startsWith('istio-system/')));
    await assertDrawnWell(page, "the seed's request traced after the fix");
    await page.screenshot({ path: join(shots, 'console-trace-after.png') });
    // The hops by keyboard: the focused hop's proxy is marked on the graph; Enter opens its details.
    const marked = () =>
      page.evaluate(() =>
        (
          globalThis as unknown as {
            kfmesh: { view: { cy: { nodes(s: string): { map<T>(f: (n: { id(): string }) => T): T[] } } } };
          }
        ).kfmesh.view.cy
          .nodes('.hop-mark')
          .map((n) => n.id()),
      );
    await page.focus('[data-testid="hop-table"] tbody tr');
    assert.deepEqual(await marked(), [request.from], 'the first hop: the client');
    await page.keyboard.press('ArrowDown');
    const second = (await marked())[0] ?? '';
    assert.match(second, /^istio-system\//, 'the second hop: the gateway');
    await page.keyboard.press('Enter');
    assert.equal(
      await page
        .$$eval('[data-testid="hop-table"] tbody tr:nth-child(2) details', (d) =>
          d.map((x) => (x as unknown as { open: boolean }).open),
        )
        .then((open) => open[0]),
      true,
    );
    // The same request, traced again on the platform migrated to ambient mode.
    await page.click('#mode-ambient');
    await waitForText(page, '[data-testid="trace-result"]', '(ambient mode');
    assert.deepEqual(errors, []);
  });

  test('names and labels holding HTML and script show as text and run nothing', async () => {
    // A namespace named with markup (its name can't be a host, so it only shows in lists), and a client
    // workload named with script in a namespace whose services can be called.
    const evilNs = '<img src=x onerror="globalThis.owned=1">';
    const evilName = '<script>globalThis.owned=2</script>';
    const labels = { app: 'evil' };
    const objects: KubeObject[] = [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: evilNs, labels: { 'istio-injection': 'enabled' } },
      },
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'apps', labels: { 'istio-injection': 'enabled' } },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name: evilName,
          namespace: 'apps',
          annotations: { note: '<b onmouseover=alert(1)>x</b>' },
        },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'c', ports: [{ containerPort: 8080 }] }] },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'svc', namespace: 'apps' },
        spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    ];
    const path = join(work, 'evil.yaml');
    writeFileSync(path, toYaml(objects));
    const errors: string[] = [];
    const page = await open(chromium.browser(), await serve([path]), errors);
    await page.selectOption('#grouping', 'workloads');
    const client = `apps/${evilName}`;
    const state = await graphState(page);
    assert.ok(
      state.nodes.some((n) => n.id === client),
      'the workload is on the graph under its own name',
    );
    assert.equal(
      await page.$eval(
        '#clients',
        (d, value) => [...d.querySelectorAll('option')].some((o) => o.value === value),
        client,
      ),
      true,
    );
    assert.ok(((await page.textContent('#namespace')) ?? '').includes(evilNs), 'the namespace shows as text');
    await page.fill('#search', 'script');
    assert.deepEqual((await graphState(page)).matched, [client]);
    await traceIn(page, {
      from: client,
      url: 'http://svc.apps.svc.cluster.local/',
      method: 'GET',
      headers: [],
    });
    const rows = await hopRows(page);
    assert.equal(rows[0]?.cells[1], `sidecar ${client}`, 'the name shows in the hop table as written');
    const ran = {
      owned: await page.evaluate(() => (globalThis as unknown as { owned?: number }).owned),
      images: await page.locator('img').count(),
      scripts: await page.$$eval('script', (list) => list.map((s) => s.getAttribute('src'))),
      bold: await page.locator('b').count(),
    };
    assert.deepEqual(ran, { owned: undefined, images: 0, scripts: ['/console.js'], bold: 0 });
    assert.deepEqual(errors, []);
  });
});
