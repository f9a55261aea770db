/**
 * What a trace gives: the hops of one request, its response and the metrics the proxies report. This is the
 * simulator's output and the shape `kfmesh trace -o json` prints (the command-line contract), so the console
 * page reads it too without importing the simulator.
 */

/** One proxy the request passes. */
export interface Hop {
  kind: 'sidecar' | 'gateway' | 'ztunnel' | 'waypoint';
  namespace: string;
  workload: string;
  direction: 'outbound' | 'inbound';
  listener?: string;
  routeConfig?: string;
  virtualHost?: string;
  virtualService?: string;
  route?: string;
  cluster?: string;
  /** Where the request was sent next: `ip:port` (and the workload when known). */
  upstream?: string;
  /** The Host the request leaves this proxy with (after rewrites). */
  authority: string;
  path: string;
  mtls: boolean;
  tls?: string;
  decision: 'allow' | 'deny' | 'none';
  policy?: string;
  /** A response this proxy produced itself. */
  code?: number;
  flags?: string;
  split?: { cluster: string; weight: number }[];
  notes: string[];
}

/** The outcome of a trace. */
export interface TraceResult {
  request: { from: string; method: string; url: string; headers: Record<string, string> };
  response: { code: number; flags: string };
  hops: Hop[];
  telemetry: TelemetryRecord[];
  /** One line that says what happened. */
  summary: string;
  /** The application that answered (`namespace/workload`, or `ip:port` outside the mesh); absent when a proxy did. */
  answeredBy?: string;
  /** The share of the requests that take this path, when weighted splits are on it. */
  share?: number;
  /** Set when the path crosses a part of the data plane this version does not simulate (the trace is then partial). */
  unsupported?: string;
}

/** One emitted metric record. */
export interface TelemetryRecord {
  metric: string;
  reporter: 'source' | 'destination' | 'waypoint';
  /** `namespace/workload` of the reporting proxy. */
  proxy: string;
  labels: Record<string, string>;
}
