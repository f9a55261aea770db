/**
 * What runs around the controller: Prometheus metrics (reconciles and errors, reconcile and apply
 * latency, queue depth) and the health endpoints (`/healthz`: the process serves; `/readyz`: the caches
 * are synced), each on its own address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface ControllerMetrics {
  registry: Registry;
  reconciles: Counter<'result'>;
  reconcileSeconds: Histogram;
  applySeconds: Histogram;
  queueDepth: Gauge;
  isLeader: Gauge;
}

/** The controller's metrics; `depth` is read at each scrape. */
export function controllerMetrics(depth: () => number): ControllerMetrics {
  const registry = new Registry();
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  return {
    registry,
    reconciles: new Counter({
      name: 'kfmesh_reconcile_total',
      help: 'Reconciles of an owner (InferenceService, Profile, Notebook, namespace), by result.',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    reconcileSeconds: new Histogram({
      name: 'kfmesh_reconcile_duration_seconds',
      help: 'Time to reconcile one owner.',
      buckets,
      registers: [registry],
    }),
    applySeconds: new Histogram({
      name: 'kfmesh_apply_duration_seconds',
      help: 'Time of one server-side apply.',
      buckets,
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'kfmesh_workqueue_depth',
      help: 'Owners waiting to be reconciled.',
      registers: [registry],
      collect() {
        this.set(depth());
      },
    }),
    isLeader: new Gauge({
      name: 'kfmesh_leader',
      help: '1 while this replica reconciles: it holds the leader lease, or runs without --leader-elect.',
      registers: [registry],
    }),
  };
}

/** Where a server listens. */
export interface BindAddress {
  host: string;
  port: number;
}

/** `host:port`, `:port` (every interface) or `0` (off). */
export function parseBindAddress(flag: string, value: string): BindAddress | undefined {
  if (value === '0') return undefined;
  const m = /^(.*):(\d+)$/.exec(value);
  if (!m) throw new Error(`${flag} must be HOST:PORT, :PORT or 0, got ${JSON.stringify(value)}`);
  return { host: m[1] || '0.0.0.0', port: Number(m[2]) };
}

/** Serves one GET handler per path; resolves with the address it listens on. */
export async function serveEndpoints(
  address: BindAddress,
  routes: Record<string, () => Promise<{ code: number; type: string; body: string }>>,
): Promise<{ server: Server; address: AddressInfo }> {
  const server = createServer((req, res) => {
    const route = routes[(req.url ?? '/').split('?')[0] ?? '/'];
    if (!route || req.method !== 'GET') {
      res.writeHead(404).end('not found\n');
      return;
    }
    route().then(
      ({ code, type, body }) => res.writeHead(code, { 'content-type': type }).end(body),
      (error: unknown) => res.writeHead(500).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, resolve);
  });
  return { server, address: server.address() as AddressInfo };
}
