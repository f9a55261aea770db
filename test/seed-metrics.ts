/**
 * The published seed (../shared/conformance/traces, cases 01 and 02: KServe's VirtualService without and
 * with `mesh`, Istio 1.20) as `kfmesh explain` tests use it: each case's input as the configuration, and its
 * published client-side `istio_requests_total` labels, with the client the case names, as exposition text.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from './conformance/cases.ts';

const traces = join(projectRoot, '../shared/conformance/traces');
export const seedBefore = join(traces, '01-kserve-vs-without-mesh-passthrough.yaml');
export const seedAfter = join(traces, '02-kserve-vs-with-mesh-local-gateway.yaml');
/** Why the seed cannot be read here, or undefined. */
export const seedMissing =
  existsSync(seedBefore) && existsSync(seedAfter)
    ? undefined
    : `${traces} is missing (../shared beside the project)`;

export interface TraceCase {
  args: string[];
  input: unknown[];
  expect: { telemetry?: { metric: string; reporter: string; labels: Record<string, string> }[] };
}

export const loadCase = (file: string) => parse(readFileSync(file, 'utf8')) as TraceCase;

/** The case's published client report as exposition text, labelled with the client the case names. */
export function seedExposition(c: TraceCase, value = 100): string {
  const from = c.args[c.args.indexOf('--from') + 1] ?? '';
  const [namespace, workload] = from.split('/');
  const lines = ['# TYPE istio_requests_total counter'];
  const report = (c.expect.telemetry ?? []).find(
    (t) => t.metric === 'istio_requests_total' && t.reporter === 'source',
  );
  if (report) {
    const labels = {
      reporter: report.reporter,
      source_workload: workload,
      source_workload_namespace: namespace,
      ...report.labels,
    };
    const text = Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(String(v))}`);
    lines.push(`istio_requests_total{${text.join(',')}} ${value}`);
  }
  return `${lines.join('\n')}\n`;
}
