/**
 * The console's HTTP server: the page (built into dist/ui, served from memory) and the JSON API of a
 * `ConsoleModel` under `/api/`, read-only (GET and HEAD only), on loopback unless told otherwise. The
 * model can be replaced while serving (a reload). The page may load only what this server serves.
 */
import { messageOf } from '../model/errors.ts';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import type { ConsoleModel } from './api.ts';

export interface ConsoleServer {
  server: Server;
  address: AddressInfo;
  /** Serves another model from now on (after a reload); the one before is closed. */
  replace(model: ConsoleModel): void;
  close(): Promise<void>;
}

const securityHeaders = {
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** Where the API is (`/api/`). */
const apiIndex = `{"api":["/api/summary","/api/graph[?mode=sidecar|ambient]","/api/trace?from=NS/WORKLOAD&url=URL[&method=M][&header=Name:%20value][&mode=ambient][&istio=X.Y]","/api/findings","/api/render?mode=sidecar|ambient","/api/objects?owner=InferenceService/NS/NAME|Profile//NAME[&mode=ambient]","/api/object?group=G&kind=K&namespace=NS&name=N","/api/migration","/api/plan (202 with its progress until it is done)","/api/plan/graph?step=N","/api/observed"]}\n`;

const pageTypes: Record<string, string> = {
  '/index.html': 'text/html; charset=utf-8',
  '/console.js': 'text/javascript; charset=utf-8',
  '/console.js.map': 'application/json; charset=utf-8',
  '/console.css': 'text/css; charset=utf-8',
  '/console.js.LEGAL.txt': 'text/plain; charset=utf-8',
};

/** The page's files, read once (dist/ui, next to dist/src). */
function pageFiles(): Map<string, { type: string; body: Buffer }> {
  const dir = new URL('../../ui/', import.meta.url);
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const [path, type] of Object.entries(pageTypes)) {
    try {
      files.set(path, { type, body: readFileSync(new URL(`.${path}`, dir)) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  if (!files.has('/index.html') || !files.has('/console.js'))
    throw new Error(`the console page is not built (no ${dir.pathname}index.html): run npm run build`);
  return files;
}

/**
 * Why a request is refused, or undefined when it is answered. Only requests addressed to this server by
 * a name that cannot be rebound are answered: the `Host` must be an IP address, `localhost`, or the name
 * given to `--host`, at the port the server listens on; a name any web page could point at this address
 * (DNS rebinding) is refused. Requests a browser marks as coming from another site or origin are refused
 * too, so no other page can read the API, whatever its CORS.
 */
function refusal(
  headers: IncomingHttpHeaders,
  host: string,
  address: AddressInfo | string | null,
): string | undefined {
  const port = typeof address === 'object' && address ? address.port : undefined;
  const given = headers.host ?? '';
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(given);
  const name = (match?.[1] ?? '').toLowerCase();
  const bare = name.startsWith('[') ? name.slice(1, -1) : name;
  const portOk = (match?.[2] ? Number(match[2]) : 80) === port;
  const nameOk = isIP(bare) !== 0 || bare === 'localhost' || bare === host.toLowerCase();
  if (!match || !portOk || !nameOk)
    return `this console answers only requests addressed to it by IP address or localhost, not ${JSON.stringify(given)}`;
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return `cross-origin requests are refused (Sec-Fetch-Site: ${site})`;
  const origin = headers.origin;
  if (origin !== undefined && origin !== `http://${given}`)
    return `cross-origin requests are refused (Origin: ${origin})`;
  return undefined;
}

export async function serveConsole(
  model: ConsoleModel,
  host: string,
  port: number,
  onError: (error: unknown) => void = () => undefined,
  onRefused: (reason: string) => void = () => undefined,
): Promise<ConsoleServer> {
  let current = model;
  const page = pageFiles();
  const server = createServer(async (req, res) => {
    const send = (status: number, body: string | Buffer, type = 'application/json; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, ...securityHeaders });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const refused = refusal(req.headers, host, server.address());
    if (refused) {
      onRefused(refused);
      send(403, `${JSON.stringify({ error: refused })}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(405, '{"error":"the console is read-only: GET and HEAD only"}\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://console');
    const file = page.get(url.pathname === '/' ? '/index.html' : url.pathname);
    if (file) {
      send(200, file.body, file.type);
      return;
    }
    if (url.pathname === '/api/' || url.pathname === '/api') {
      send(200, apiIndex);
      return;
    }
    try {
      const answer = await current.answer(url.pathname, url.searchParams);
      send(answer.status, `${JSON.stringify(answer.body)}\n`);
    } catch (error) {
      onError(error);
      send(500, `${JSON.stringify({ error: messageOf(error) })}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    address: server.address() as AddressInfo,
    replace: (next) => {
      const before = current;
      current = next;
      void before.close();
    },
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await current.close();
    },
  };
}
