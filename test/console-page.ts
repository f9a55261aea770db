/** The console page in Chromium, as the browser tests read it: open it, wait for text, read its graph. */
import type { Browser, Page } from 'playwright-core';
import type { Serving } from './serve-process.ts';

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
