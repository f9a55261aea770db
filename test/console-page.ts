/** The console page in Chromium, as the browser tests read it: open it, wait for text, read its graph. */
import type { Browser, Page } from 'playwright-core';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before } from 'node:test';
import { launchBrowser } from './browser.ts';
import { stopServe, type Serving } from './serve-process.ts';
import { boxesOverlap, inset, lineMeetsBox, type Box, type Point } from './geometry.ts';

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

export async function open(
  browser: Browser,
  serving: Serving,
  errors: string[],
  viewport = { width: 1600, height: 950 },
): Promise<Page> {
  const page = await browser.newPage({ viewport });
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

/**
 * Clicks an element of the graph at its place on the page (an edge: at a point of it clear of nodes and
 * other edges), centring the view on it first when it is out of view (three tries: headless Chromium may drop
 * one).
 */
export async function tapOn(page: Page, id: string, done: string): Promise<void> {
  const at = await page.evaluate((element) => {
    interface Spot {
      x: number;
      y: number;
    }
    interface El {
      id(): string;
      isEdge(): boolean;
      isLoop(): boolean;
      renderedPosition(): Spot;
      renderedMidpoint(): Spot;
      renderedSourceEndpoint(): Spot;
      renderedTargetEndpoint(): Spot;
      renderedSegmentPoints(): Spot[] | undefined;
      renderedBoundingBox(o: object): { x1: number; y1: number; x2: number; y2: number };
    }
    const cy = (
      globalThis as unknown as {
        kfmesh: {
          view: {
            cy: {
              width(): number;
              height(): number;
              center(e: unknown): void;
              panBy(by: Spot): void;
              getElementById(id: string): El;
              edges(): El[];
              nodes(s: string): El[];
            };
          };
        };
      }
    ).kfmesh.view.cy;
    const e = cy.getElementById(element);
    const p = e.isEdge() ? e.renderedMidpoint() : e.renderedPosition();
    if (p.x < 10 || p.y < 10 || p.x > cy.width() - 10 || p.y > cy.height() - 10) cy.center(e);
    if (!e.isEdge()) return e.renderedPosition();
    // An edge: a point of its line clear of the nodes and at least 6 px from every other edge's line.
    const lineOf = (x: El): Spot[] => [
      x.renderedSourceEndpoint(),
      ...(x.isLoop() ? [] : (x.renderedSegmentPoints() ?? [])),
      x.renderedTargetEndpoint(),
    ];
    const distance = (s: Spot, a: Spot, b: Spot) => {
      const [dx, dy] = [b.x - a.x, b.y - a.y];
      const t = Math.max(0, Math.min(1, ((s.x - a.x) * dx + (s.y - a.y) * dy) / (dx * dx + dy * dy || 1)));
      return Math.hypot(s.x - a.x - t * dx, s.y - a.y - t * dy);
    };
    const boxes = [...cy.nodes('[kind]')].map((n) => n.renderedBoundingBox({}));
    const others = [...cy.edges()].filter((o) => o.id() !== e.id()).map(lineOf);
    const line = lineOf(e);
    for (let i = 1; i < line.length; i++)
      for (const t of [0.5, 0.25, 0.75]) {
        const [a, b] = [line[i - 1] as Spot, line[i] as Spot];
        const s = { x: a.x + t * (b.x - a.x), y: a.y + t * (b.y - a.y) };
        const clear =
          !boxes.some((n) => s.x > n.x1 - 4 && s.x < n.x2 + 4 && s.y > n.y1 - 4 && s.y < n.y2 + 4) &&
          others.every((o) => o.every((q, j) => j === 0 || distance(s, o[j - 1] as Spot, q) > 6));
        if (!clear) continue;
        if (s.x > 5 && s.y > 5 && s.x < cy.width() - 5 && s.y < cy.height() - 5) return s;
        // Out of view: the view moves to put it in the middle.
        const shift = { x: cy.width() / 2 - s.x, y: cy.height() / 2 - s.y };
        cy.panBy(shift);
        return { x: s.x + shift.x, y: s.y + shift.y };
      }
    return e.renderedMidpoint();
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

/** What the graph draws, in the graph's own coordinates: boxes of nodes, names and titles, and edge lines. */
export interface Drawing {
  nodes: { id: string; body: Box; label?: Box }[];
  /** Band titles (a namespace's name over its box). */
  titles: { id: string; box: Box }[];
  edges: { id: string; source: string; target: string; line: Point[]; label?: Box; classes: string }[];
}

/** Reads what the page's graph draws now (visible elements only). */
export function drawing(page: Page): Promise<Drawing> {
  return page.evaluate(() => {
    interface BB {
      x1: number;
      y1: number;
      x2: number;
      y2: number;
      w: number;
    }
    interface El {
      id(): string;
      data(k: string): string;
      hasClass(c: string): boolean;
      classes(): string[];
      visible(): boolean;
      style(k: string): string;
      boundingBox(o: object): BB;
      isLoop(): boolean;
      sourceEndpoint(): { x: number; y: number };
      targetEndpoint(): { x: number; y: number };
      segmentPoints(): { x: number; y: number }[] | undefined;
    }
    const cy = (
      globalThis as unknown as {
        kfmesh: { view: { cy: { nodes(): El[] & { filter(f: (e: El) => boolean): El[] }; edges(): El[] } } };
      }
    ).kfmesh.view.cy;
    const box = (b: BB) => ({ x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2 });
    const labelOf = (e: El) => {
      if (!e.style('label')) return undefined;
      const b = e.boundingBox({
        includeNodes: false,
        includeEdges: false,
        includeLabels: true,
        includeOverlays: false,
        includeUnderlays: false,
      });
      return b.w > 0 && Number.isFinite(b.w) ? box(b) : undefined;
    };
    const visible = [...cy.nodes()].filter((n) => n.visible());
    return {
      nodes: visible
        .filter((n) => !n.hasClass('band'))
        .map((n) => ({
          id: n.id(),
          body: box(n.boundingBox({ includeLabels: false, includeOverlays: false, includeUnderlays: false })),
          ...(labelOf(n) ? { label: labelOf(n) } : {}),
        })),
      titles: visible
        .filter((n) => n.hasClass('band') && labelOf(n) !== undefined)
        .map((n) => ({ id: n.id(), box: labelOf(n) as ReturnType<typeof box> })),
      edges: [...cy.edges()]
        .filter((e) => e.visible())
        .map((e) => ({
          id: e.id(),
          source: e.data('source'),
          target: e.data('target'),
          line: [e.sourceEndpoint(), ...(e.isLoop() ? [] : (e.segmentPoints() ?? [])), e.targetEndpoint()],
          ...(labelOf(e) ? { label: labelOf(e) } : {}),
          classes: e.classes().join(' '),
        })),
    };
  });
}

/**
 * What is wrong with a drawing, each as a sentence: an edge through a node that is not one of its ends; a
 * node's name over another node or name; an edge label over a node, a name, a title or another edge label;
 * two titles over each other. (Boxes are shrunk by a pixel: touching is not overlapping.)
 */
export function drawingProblems(d: Drawing): string[] {
  const problems: string[] = [];
  const names = d.nodes.flatMap((n) => (n.label ? [{ id: n.id, box: inset(n.label, 1) }] : []));
  const bodies = d.nodes.map((n) => ({ id: n.id, box: inset(n.body, 1) }));
  for (const e of d.edges)
    for (const b of bodies)
      if (b.id !== e.source && b.id !== e.target && lineMeetsBox(e.line, b.box))
        problems.push(`edge ${e.source} → ${e.target} passes through ${b.id}`);
  for (const n of names) {
    for (const b of bodies)
      if (b.id !== n.id && boxesOverlap(n.box, b.box)) problems.push(`the name of ${n.id} is over ${b.id}`);
    for (const m of names)
      if (m.id < n.id && boxesOverlap(n.box, m.box))
        problems.push(`the names of ${n.id} and ${m.id} overlap`);
  }
  const labels = d.edges.flatMap((e) =>
    e.label ? [{ id: `${e.source} → ${e.target}`, box: inset(e.label, 1) }] : [],
  );
  for (const l of labels) {
    for (const b of [...bodies, ...names, ...d.titles.map((t) => ({ id: t.id, box: inset(t.box, 1) }))])
      if (boxesOverlap(l.box, b.box)) problems.push(`the label of edge ${l.id} is over ${b.id}`);
    for (const m of labels)
      if (m.id < l.id && boxesOverlap(l.box, m.box))
        problems.push(`the labels of edges ${l.id} and ${m.id} overlap`);
  }
  for (const t of d.titles)
    for (const u of d.titles)
      if (u.id < t.id && boxesOverlap(inset(t.box, 1), inset(u.box, 1)))
        problems.push(`the titles ${t.id} and ${u.id} overlap`);
  return problems;
}

/** Asserts the graph on the page is drawn well (see `drawingProblems`); returns the drawing. */
export async function assertDrawnWell(page: Page, what: string): Promise<Drawing> {
  const d = await drawing(page);
  const problems = drawingProblems(d);
  assert.deepEqual(
    problems.slice(0, 12),
    [],
    `${what}: ${problems.length} problems in ${d.nodes.length} nodes, ${d.edges.length} edges`,
  );
  return d;
}
