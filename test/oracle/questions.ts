/**
 * Turns one kfmesh trace into the oracle's questions: for each hop at a sidecar or a gateway, the proxy and
 * the request as it enters it; for each ztunnel, the connection as it arrives (address, sender, identity);
 * for each waypoint an ambient client's ztunnel tunnels to, the request inside the tunnel. Waypoints reached
 * otherwise are not asked yet (counted apart).
 */
import { parse } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import type { Hop, TraceResult } from '../../src/model/trace-result.ts';
import type { Workload } from '../../src/mesh/workloads.ts';
import { proxyOf, type OracleProxy, type OracleRequest } from './istio-oracle.ts';

/** A request as the trace started it (the CLI's flags). */
export interface Started {
  from: string;
  url: string;
  method: string;
  headers: Record<string, string>;
}

/** The flags of a trace command line that say what was sent. */
export function startedFrom(args: readonly string[]): Started {
  const started: Started = { from: '', url: '', method: 'GET', headers: {} };
  for (let i = 0; i < args.length; i++) {
    const value = args[i + 1] ?? '';
    switch (args[i]) {
      case '--from':
        started.from = value;
        break;
      case '--url':
        started.url = value;
        break;
      case '--method':
      case '-X':
        started.method = value;
        break;
      case '-H':
      case '--header': {
        const colon = value.indexOf(':');
        if (colon > 0)
          started.headers[value.slice(0, colon).trim().toLowerCase()] = value.slice(colon + 1).trim();
        break;
      }
    }
  }
  return started;
}

/** An address outside the cluster, for a host no Service or ServiceEntry names (TEST-NET-3). */
const outsideAddress = '203.0.113.10';

/**
 * The address a client's DNS gives for a host: a Service's cluster IP; a ServiceEntry's first address only
 * where sidecars answer DNS (the mesh config's `ISTIO_META_DNS_CAPTURE`), else the cluster's DNS does not
 * know the name and it resolves outside.
 */
export function resolve(objects: readonly KubeObject[], host: string, clientNamespace: string): string {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) return host;
  const parts = host.replace(/\.$/, '').split('.');
  const [name, ns] = [parts[0] ?? '', parts[1] ?? clientNamespace];
  const serviceName =
    parts.length === 1 ||
    parts.length === 2 ||
    (parts.length >= 3 &&
      parts[2] === 'svc' &&
      (parts.length === 3 || parts.slice(3).join('.') === 'cluster.local'));
  if (serviceName) {
    const svc = objects.find(
      (o) =>
        o.kind === 'Service' &&
        o.apiVersion === 'v1' &&
        o.metadata.name === name &&
        o.metadata.namespace === ns,
    );
    const ip = (svc?.['spec'] as { clusterIP?: string } | undefined)?.clusterIP;
    if (ip && ip !== 'None') return ip;
  }
  if (!capturesDns(objects)) return outsideAddress;
  for (const se of objects.filter((o) => o.kind === 'ServiceEntry')) {
    const spec = se['spec'] as { hosts?: string[]; addresses?: string[] } | undefined;
    if (spec?.hosts?.includes(host) && spec.addresses?.[0]) return spec.addresses[0].replace(/\/\d+$/, '');
  }
  return outsideAddress;
}

/** Whether the mesh config (ConfigMap `istio`) has sidecars answer DNS for their applications. */
function capturesDns(objects: readonly KubeObject[]): boolean {
  const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'istio');
  const text = (config?.['data'] as Record<string, string> | undefined)?.['mesh'];
  if (!text) return false;
  const mesh = parse(text) as { defaultConfig?: { proxyMetadata?: Record<string, unknown> } } | null;
  return String(mesh?.defaultConfig?.proxyMetadata?.['ISTIO_META_DNS_CAPTURE']) === 'true';
}

/** A workload's identity as a peer certificate carries it (the oracle's cluster is cluster.local). */
const spiffeOf = (w: Workload) => `spiffe://cluster.local/ns/${w.namespace}/sa/${w.serviceAccount}`;

/** The `ip:port` a hop sent the request on to, when it names one. */
function upstreamOf(hop: Hop | undefined): [string, number] | undefined {
  const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)/.exec(hop?.upstream ?? '');
  return m ? [m[1] ?? '', Number(m[2])] : undefined;
}

/** What every question of one trace is asked from: the platform, the request, and its client. */
interface Asking {
  objects: readonly KubeObject[];
  workloads: readonly Workload[];
  url: URL;
  urlPort: number;
  /** The workload that sent the request (none for a client outside the cluster). */
  client: Workload | undefined;
  workloadOf: (hop: Hop | undefined) => Workload | undefined;
}

/** One question and the hop it asks about. */
export interface Question {
  hop: number;
  request: OracleRequest;
}

/** The proxies and questions for the hops of one trace that the oracle answers. */
export function questionsFor(
  objects: readonly KubeObject[],
  workloads: readonly Workload[],
  started: Started,
  trace: TraceResult,
  id: string,
): { proxies: OracleProxy[]; questions: Question[]; skipped: string[] } {
  const url = new URL(started.url);
  const https = url.protocol === 'https:';
  const urlPort = Number(url.port || (https ? 443 : 80));
  const proxies = new Map<string, OracleProxy>();
  const questions: Question[] = [];
  const skipped: string[] = [];
  const workloadOf = (hop: Hop | undefined) =>
    hop && workloads.find((w) => w.namespace === hop.namespace && w.name === hop.workload);
  const clientNamespace = started.from.includes('/') ? (started.from.split('/')[0] ?? '') : '';
  const client = workloads.find((c) => `${c.namespace}/${c.name}` === started.from);
  const ask: Asking = { objects, workloads, url, urlPort, client, workloadOf };
  trace.hops.forEach((hop, i) => {
    const w = workloadOf(hop);
    const previous = i > 0 ? trace.hops[i - 1] : undefined;
    if (hop.kind === 'ztunnel') {
      const question = ztunnelQuestion(ask, trace, i, `${id}#${i}`);
      if (typeof question === 'string') skipped.push(question);
      else questions.push({ hop: i, request: question });
      return;
    }
    if (!w) {
      skipped.push(`${hop.kind} ${hop.namespace}/${hop.workload}`);
      return;
    }
    // The client's ztunnel tunnels the connection to the waypoint with the client's identity; the
    // waypoint reads the address the client called (the Service's) from the tunnel.
    if (hop.kind === 'waypoint' && !(i === 1 && previous?.kind === 'ztunnel' && client)) {
      skipped.push(`waypoint ${hop.namespace}/${hop.workload}: not reached from an ambient client's ztunnel`);
      return;
    }
    const type = hop.kind === 'gateway' ? 'router' : hop.kind === 'waypoint' ? 'waypoint' : 'sidecar';
    const proxy = proxyOf(w, type);
    proxy.id = `${type}:${proxy.id}`;
    proxies.set(proxy.id, proxy);
    // A Host header given with the request replaces the URL's authority, as curl sends it.
    const { host: hostHeader, ...headers } = started.headers;
    const entering = previous
      ? { authority: previous.authority, path: previous.path }
      : { authority: hostHeader ?? url.host, path: `${url.pathname}${url.search}` };
    const base = {
      id: `${id}#${i}`,
      proxy: proxy.id,
      protocol: 'http' as const,
      authority: entering.authority,
      path: entering.path,
      method: started.method,
      headers,
    };
    if (hop.kind === 'waypoint' && client) {
      questions.push({
        hop: i,
        request: {
          ...base,
          direction: 'waypoint',
          address: resolve(objects, url.hostname, clientNamespace),
          port: urlPort,
          tls: 'mtls',
          principal: spiffeOf(client),
          sourceIP: client.ip,
        },
      });
      return;
    }
    if (!previous) {
      if (hop.kind === 'sidecar' && hop.direction === 'outbound') {
        const address = resolve(objects, url.hostname, clientNamespace);
        questions.push({
          hop: i,
          request: {
            ...base,
            direction: 'outbound',
            address,
            port: urlPort,
            tls: https ? 'tls' : 'none',
            ...(https ? { sni: url.hostname } : {}),
            sourceIP: w.ip,
          },
        });
      } else if (hop.kind === 'gateway') {
        questions.push({
          hop: i,
          request: {
            ...base,
            direction: 'gateway',
            address: w.ip,
            port: targetPort(objects, w, urlPort),
            tls: https ? 'tls' : 'none',
            ...(https ? { sni: url.hostname } : {}),
            sourceIP: outsideAddress,
          },
        });
      } else if (hop.kind === 'sidecar' && hop.direction === 'inbound') {
        // A client without a proxy connects straight to the server's pod (kube-proxy translates a cluster IP).
        const [address, port] = throughKubeProxy(
          objects,
          w,
          resolve(objects, url.hostname, clientNamespace),
          urlPort,
        );
        // From the client's pod address (a client outside the cluster: an outside address).
        questions.push({
          hop: i,
          request: {
            ...base,
            direction: 'inbound',
            address,
            port,
            tls: 'none',
            sourceIP: client?.ip ?? outsideAddress,
          },
        });
      } else skipped.push(`first hop ${hop.kind} ${hop.direction}`);
      return;
    }
    const upstream = upstreamOf(previous);
    if (!upstream) {
      skipped.push(`${hop.kind} ${hop.namespace}/${hop.workload}: the hop before names no upstream address`);
      return;
    }
    const sender = workloadOf(previous);
    // A connection to a Service's cluster IP reaches the pod translated by kube-proxy: the pod's address
    // and the Service port's target port.
    const [address, port] = throughKubeProxy(objects, w, ...upstream);
    questions.push({
      hop: i,
      request: {
        ...base,
        direction: hop.kind === 'gateway' ? 'gateway' : 'inbound',
        address,
        port,
        tls: previous.mtls ? 'mtls' : 'none',
        ...(previous.mtls && sender ? { principal: spiffeOf(sender) } : {}),
        sourceIP: sender?.ip ?? outsideAddress,
      },
    });
  });
  return { proxies: [...proxies.values()], questions, skipped };
}

/**
 * The connection a destination ztunnel receives (hop `i`): opened to the address the hop before sent to,
 * by the workload that sent it (the client itself when the hop before is the client's ztunnel), with that
 * workload's identity when the connection is HBONE.
 */
function ztunnelQuestion(ask: Asking, trace: TraceResult, i: number, id: string): OracleRequest | string {
  const hop = trace.hops[i] as Hop;
  const previous = trace.hops[i - 1];
  if (i === 0) return firstZtunnelQuestion(ask, hop, id);
  if (hop.direction === 'outbound') return `ztunnel outbound after another hop`;
  const upstream = upstreamOf(previous);
  if (!previous || !upstream)
    return `ztunnel ${hop.namespace}/${hop.workload}: the hop before names no upstream address`;
  // After the client's ztunnel, the sender is the hop before it, or the client itself.
  const before = previous.kind === 'ztunnel' ? trace.hops[i - 2] : previous;
  const sender = before ? ask.workloadOf(before) : ask.client;
  if (!sender)
    return `ztunnel ${hop.namespace}/${hop.workload}: the sender is not a workload of the platform`;
  return {
    id,
    proxy: '',
    direction: 'ztunnel',
    address: upstream[0],
    port: upstream[1],
    protocol: 'tcp',
    tls: previous.mtls ? 'mtls' : 'none',
    ...(previous.mtls ? { principal: spiffeOf(sender) } : {}),
    sourceIP: sender.ip,
  };
}

/**
 * The first hop of a client without a sidecar is a ztunnel: the ambient client's own (outbound capture of a
 * connection to the address its DNS gives), or, for a client outside the mesh, the destination pod's,
 * reached through kube-proxy without identity.
 */
function firstZtunnelQuestion(ask: Asking, hop: Hop, id: string): OracleRequest | string {
  const { objects, workloads, url, urlPort, client } = ask;
  if (!client)
    return `ztunnel ${hop.namespace}/${hop.workload}: the client is not a workload of the platform`;
  const address = resolve(objects, url.hostname, client.namespace);
  const base = { id, proxy: '', protocol: 'tcp' as const, tls: 'none' as const, sourceIP: client.ip };
  if (hop.direction === 'outbound') return { ...base, direction: 'ztunnel-outbound', address, port: urlPort };
  const svc = objects.find((o) => o.kind === 'Service' && specOfService(o).clusterIP === address);
  const pod = svc && workloads.find((w) => selects(svc, w));
  if (!pod) return `ztunnel ${hop.namespace}/${hop.workload}: ${address} is no Service with a pod`;
  const [podIp, port] = throughKubeProxy(objects, pod, address, urlPort);
  return { ...base, direction: 'ztunnel', address: podIp, port };
}

/** A Service as the questions read it. */
type ServiceSpec = {
  clusterIP?: string;
  selector?: Record<string, string>;
  ports?: { port: number; targetPort?: number | string }[];
};
const specOfService = (o: KubeObject) => (o['spec'] ?? {}) as ServiceSpec;

/** Whether a Service selects a pod: in its namespace, by a selector that is not empty. */
function selects(svc: KubeObject, w: Workload): boolean {
  const selector = specOfService(svc).selector ?? {};
  return (
    w.namespace === svc.metadata.namespace &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => w.labels[k] === v)
  );
}

/**
 * The port of pod `w` that a Service's `port` reaches: its targetPort, a number or a name of the pod's
 * container ports (the port itself when unset or unknown).
 */
function podPort(spec: ServiceSpec, w: Workload, port: number): number | undefined {
  const p = spec.ports?.find((x) => x.port === port);
  if (!p) return undefined;
  if (typeof p.targetPort === 'number') return p.targetPort;
  if (typeof p.targetPort === 'string') return w.containerPorts.get(p.targetPort) ?? port;
  return port;
}

/** Where a connection to `ip:port` lands on the pod of `w`: kube-proxy's translation of a cluster IP. */
function throughKubeProxy(
  objects: readonly KubeObject[],
  w: Workload,
  ip: string,
  port: number,
): [string, number] {
  const svc = objects.find((o) => o.kind === 'Service' && specOfService(o).clusterIP === ip);
  return svc ? [w.ip, podPort(specOfService(svc), w, port) ?? port] : [ip, port];
}

/** The port a gateway pod receives a Service port on: the first Service selecting it with that port. */
function targetPort(objects: readonly KubeObject[], gateway: Workload, port: number): number {
  for (const svc of objects.filter((o) => o.kind === 'Service' && selects(o, gateway))) {
    const to = podPort(specOfService(svc), gateway, port);
    if (to !== undefined) return to;
  }
  return port;
}
