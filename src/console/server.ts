/**
 * The console's HTTP server: the JSON API of a `ConsoleModel` under `/api/`, read-only (GET and HEAD
 * only), on loopback unless told otherwise. The model can be replaced while serving (a reload).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ConsoleModel } from './api.ts';

export interface ConsoleServer {
  server: Server;
  address: AddressInfo;
  /** Serves another model from now on (after a reload). */
  replace(model: ConsoleModel): void;
  close(): Promise<void>;
}

const securityHeaders = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'",
  'cache-control': 'no-store',
};

/** What `/` answers until the page is built: where the API is. */
const index = `{"api":["/api/summary","/api/graph","/api/trace?from=NS/WORKLOAD&url=URL[&method=M][&header=Name:%20value][&mode=ambient]","/api/findings","/api/render?mode=sidecar|ambient","/api/migration"]}\n`;

export async function serveConsole(
  model: ConsoleModel,
  host: string,
  port: number,
  onError: (error: unknown) => void = () => undefined,
): Promise<ConsoleServer> {
  let current = model;
  const server = createServer((req, res) => {
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...securityHeaders });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(405, '{"error":"the console is read-only: GET and HEAD only"}\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://console');
    if (url.pathname === '/') {
      send(200, index);
      return;
    }
    try {
      const answer = current.answer(url.pathname, url.searchParams);
      send(answer.status, `${JSON.stringify(answer.body)}\n`);
    } catch (error) {
      onError(error);
      send(500, `${JSON.stringify({ error: (error as Error).message })}\n`);
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
      current = next;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
