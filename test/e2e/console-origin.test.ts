/**
 * The console in real Chromium, attacked as a web page would: reached by a name that resolves to it
 * (DNS rebinding, simulated with Chromium's host resolver rules), and read from a page of another origin.
 * The server refuses both; its own page still works.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestOptions, launchBrowser } from '../browser.ts';
import { startServe, stopServe, type Serving } from '../serve-process.ts';
import { eventually } from '../controller-process.ts';

describe('the console refuses other origins (Chromium)', browserTestOptions(), () => {
  let browser: Browser;
  let serving: Serving;
  let other: Server;
  let otherPort = 0;

  before(async () => {
    serving = await startServe([]);
    // The attacker's page: it asks the console's API from its own origin.
    const consoleUrl = serving.base;
    other = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<!doctype html><title>other</title><script>` +
          `fetch(${JSON.stringify(`${consoleUrl}/api/summary`)}).then(r => r.text()).then(` +
          `t => { document.title = 'read: ' + t.slice(0, 40); }, e => { document.title = 'blocked: ' + e; });` +
          `</script>`,
      );
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const address = other.address();
    otherPort = typeof address === 'object' && address ? address.port : 0;
    browser = await launchBrowser(['--host-resolver-rules=MAP rebind.test 127.0.0.1']);
  });
  after(async () => {
    await browser?.close();
    other?.close();
    await stopServe(serving);
  });

  test('DNS rebinding: a name that resolves to the console gets 403, page and API alike', async () => {
    const port = new URL(serving.base).port;
    const page = await browser.newPage();
    for (const path of ['/', '/api/summary']) {
      const response = await page.goto(`http://rebind.test:${port}${path}`);
      assert.equal(response?.status(), 403, path);
      assert.match(await page.content(), /answers only requests addressed to it by IP address or localhost/);
      await eventually('the refusal logged', () =>
        /refused a request: this console answers only/.test(serving.log()) ? true : undefined,
      );
    }
    const own = await page.goto(`${serving.base}/api/summary`);
    assert.equal(own?.status(), 200);
    await page.close();
  });

  test('a page of another origin cannot read the API: the server refuses its request', async () => {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${otherPort}/`);
    await page.waitForFunction(
      () => (globalThis as unknown as { document: { title: string } }).document.title !== 'other',
    );
    assert.match(await page.title(), /^blocked: /);
    // The browser would also withhold the answer (no CORS headers); the server did not answer at all.
    await eventually('the refusal logged', () =>
      /refused a request: cross-origin requests are refused \((Sec-Fetch-Site: same-site|Origin: http:\/\/127\.0\.0\.1:\d+)\)/.test(
        serving.log(),
      )
        ? true
        : undefined,
    );
    await page.close();
  });
});
