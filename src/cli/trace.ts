/** `kfmesh trace`: follows one request through the mesh and prints the hops, the response and the metrics. */
import { compileMesh } from '../mesh/mesh.ts';
import { formatIstioVersion } from '../mesh/istio-version.ts';
import { traceAllPaths, traceRequest } from '../mesh/trace.ts';
import {
  ExitCode,
  oneOf,
  runCommand,
  snapshotFrom,
  versionNote,
  UsageError,
  type ClusterFlags,
  type Streams,
} from './io.ts';
import type { Hop, TraceResult } from '../model/trace-result.ts';
import { TraceInputError, readTraceRequest } from '../mesh/trace/request.ts';

/** Options of `kfmesh trace` as parsed from the command line. */
export interface TraceFlags extends ClusterFlags {
  from?: string;
  url?: string;
  method: string;
  header: string[];
  istioVersion?: string;
  output: string;
  clusterDomain: string;
  allPaths?: boolean;
  via?: string;
  portForward?: boolean;
}

/** Runs `kfmesh trace`. */
export function traceCommand(paths: string[], flags: TraceFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const format = oneOf('-o', flags.output, ['text', 'json']);
    let read: ReturnType<typeof readTraceRequest>;
    try {
      read = readTraceRequest(
        { ...flags, headers: flags.header, istio: flags.istioVersion },
        { from: '--from', url: '--url', header: '-H', istio: '--istio-version' },
      );
    } catch (error) {
      if (error instanceof TraceInputError) throw new UsageError(error.message);
      throw error;
    }
    const { input } = read;
    const snapshot = await snapshotFrom(paths, streams, flags);
    const mesh = compileMesh(snapshot, {
      ...(read.istio ? { istioVersion: read.istio } : {}),
      clusterDomain: flags.clusterDomain,
    });
    if (flags.via !== undefined && flags.from !== 'external')
      throw new UsageError(
        '--via names the ingress gateway of an external client: use it with --from external',
      );
    if (flags.portForward && flags.from !== 'external')
      throw new UsageError('--port-forward is how an external client comes in: use it with --from external');
    let result: TraceResult;
    let branches: TraceResult[] | undefined;
    try {
      result = traceRequest(mesh, input);
      if (flags.allPaths) branches = traceAllPaths(mesh, input);
    } catch (error) {
      if (error instanceof TraceInputError) throw new UsageError(error.message);
      throw error;
    }
    const versionText = formatIstioVersion(mesh.version);
    streams.stderr(versionNote(snapshot, read.istio));
    if (format === 'json') {
      streams.stdout(
        `${JSON.stringify({ istioVersion: versionText, ...result, ...(branches ? { paths: branches } : {}) }, null, 2)}\n`,
      );
    } else if (branches && branches.length > 1) {
      const all = branches;
      streams.stdout(
        all
          .map(
            (p, i) =>
              `path ${i + 1} of ${all.length}, ${((p.share ?? 1) * 100).toFixed(1)}% of requests\n${formatTrace(p, versionText)}`,
          )
          .join('\n'),
      );
    } else {
      streams.stdout(formatTrace(result, versionText));
    }
    return ExitCode.Ok;
  });
}

/** The readable form: the request, one block per hop, the response, the metrics. */
function formatTrace(result: TraceResult, version: string): string {
  const lines: string[] = [];
  const { request } = result;
  lines.push(`${request.method} ${request.url}  from ${request.from}  (Istio ${version})`, '');
  if (result.hops.length === 0) lines.push('  (no proxy on the path)');
  result.hops.forEach((hop, i) => lines.push(...formatHop(hop, i + 1)));
  lines.push(
    '',
    `response: ${result.response.code === 0 ? 'no HTTP response' : result.response.code} ${result.response.flags === '-' ? '' : `(${result.response.flags})`}`.trimEnd(),
  );
  lines.push(`outcome:  ${result.summary}`);
  if (result.unsupported) lines.push(`warning:  ${result.unsupported}`);
  if (result.telemetry.length > 0) {
    lines.push('', 'metrics:');
    for (const r of result.telemetry) {
      const l = r.labels;
      lines.push(
        `  ${r.metric}{reporter="${r.reporter}"} at ${r.proxy}: destination_service_name="${l['destination_service_name']}" destination_service="${l['destination_service']}" destination_workload="${l['destination_workload']}" source_principal="${l['source_principal']}" destination_principal="${l['destination_principal']}"${l['response_code'] !== undefined ? ` response_code="${l['response_code']}"` : ''} response_flags="${l['response_flags']}"`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

function formatHop(hop: Hop, n: number): string[] {
  const out = [`${n}. ${hop.kind} ${hop.namespace}/${hop.workload} (${hop.direction})`];
  const field = (name: string, value: string | undefined) => {
    if (value !== undefined && value !== '') out.push(`     ${name.padEnd(14)} ${value}`);
  };
  field('listener', hop.listener);
  field('route config', hop.routeConfig);
  field('virtual host', hop.virtualHost);
  field('VirtualService', hop.virtualService);
  field('route', hop.route);
  field('cluster', hop.cluster);
  field('upstream', hop.upstream);
  field('authority', hop.authority);
  field('path', hop.path);
  field('tls', hop.tls ?? (hop.mtls ? 'mTLS' : 'plaintext'));
  field(
    'authorization',
    hop.decision === 'none' ? undefined : `${hop.decision}${hop.policy ? ` (${hop.policy})` : ''}`,
  );
  if (hop.code !== undefined) field('replies', `${hop.code} ${hop.flags ?? ''}`.trim());
  for (const split of hop.split ?? []) field('split', `${split.weight} → ${split.cluster}`);
  for (const note of hop.notes) field('note', note);
  return out;
}
