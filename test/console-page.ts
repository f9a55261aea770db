/** The console page in Chromium, as the browser tests read it: open it, wait for text, read its graph. */
import type { Browser, Page } from 'playwright-core';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before } from 'node:test';
import { launchBrowser } from './browser.ts';
import { stopServe, type Serving } from './serve-process.ts';

export interface GraphState {
  mode: string;
  nodes: { id: string; kind: string }[];
  onPath: string[];
  matched: string[];
  drawnEdges: number;
}

/** What the page's graph holds now (read from cytoscape, since canvas pixels can't be asserted). */
export function graphState(page: Page): Promise<GraphState> {
  return page.evaluate(() => {
    const k = (globalThis as unknown as { kfmesh: { ready: { mode: string }; view: { cy: CyLike } } }).kfmesh;
    interface CyLike {
      nodes(selector?: string): { map<T>(f: (n: { id(): string; data(k: string): string }) => T): T[] };
      edges(): { length: number };
    }
    const cy = k.view.cy;
    return {
      mode: k.ready.mode,
      nodes: cy.nodes('[kind]').map((n) => ({ id: n.id(), kind: n.data('kind') })),
      onPath: cy.nodes('.on-path').map((n) => n.id()),
      matched: cy.nodes('.match').map((n) => n.id()),
      drawnEdges: cy.edges().length,
    };
  });
}

export async function open(browser: Browser, serving: Serving, errors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 950 } });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(`${serving.base}/`) && !r.url().startsWith('data:'))
      errors.push(`a request elsewhere: ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console error: ${m.text()}`);
  });
  await page.goto(`${serving.base}/`);
  await page.waitForSelector('body[data-graph-ready="sidecar"]', { timeout: 60_000 });
  return page;
}

/** Waits until the element's text holds `text`. */
export async function waitForText(page: Page, selector: string, text: string): Promise<void> {
  await page.waitForFunction(
    ([sel, wanted]) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }
      ).document
        .querySelector(sel)
        ?.textContent.includes(wanted) ?? false,
    [selector, text] as const,
  );
}

/**
 * Inside a describe: one Chromium for its tests, and at the end the browser closed, every console the
 * tests started (pushed to `servers`) stopped, and the work folder removed.
 */
export function withBrowser(work: string): { browser: () => Browser; servers: Serving[] } {
  let browser: Browser | undefined;
  const servers: Serving[] = [];
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    for (const s of servers) await stopServe(s);
    rmSync(work, { recursive: true, force: true });
  });
  return { browser: () => browser as Browser, servers };
}

/** Clicks an element of the graph at its place on the page (three tries: headless Chromium may drop one). */
export async function tapOn(page: Page, id: string, done: string): Promise<void> {
  const at = await page.evaluate((element) => {
    const cy = (
      globalThis as unknown as {
        kfmesh: {
          view: {
            cy: {
              getElementById(id: string): {
                isEdge(): boolean;
                renderedMidpoint(): { x: number; y: number };
                renderedPosition(): { x: number; y: number };
              };
            };
          };
        };
      }
    ).kfmesh.view.cy;
    const e = cy.getElementById(element);
    return e.isEdge() ? e.renderedMidpoint() : e.renderedPosition();
  }, id);
  const box = await page.locator('#graph').boundingBox();
  assert.ok(box);
  for (let attempt = 1; ; attempt++) {
    await page.mouse.click(box.x + at.x, box.y + at.y);
    try {
      await page.waitForSelector(done, { timeout: 5_000 });
      return;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}
