/** The console's JSON API, as the page reads it (GET only: the console never changes anything). */
import type { SideBySide } from '../console/graph.ts';
import type { TraceResult } from '../mesh/trace.ts';

export interface Summary {
  source: string;
  objects: number;
  kinds: Record<string, number>;
  namespaces: string[];
  inferenceServices: string[];
  profiles: string[];
  clients: string[];
  /** The Istio version the console simulates by default, and the newest it models. */
  istio: string;
  newestIstio: string;
  oldestIstio: string;
}

export interface ObjectRef {
  group: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface Finding {
  code: string;
  severity: 'error' | 'warning' | 'info';
  object: ObjectRef;
  field?: string;
  location?: string;
  message: string;
  fix?: string;
}

export interface Findings {
  summary: { findings: number; error: number; warning: number; info: number };
  findings: Finding[];
}

export interface Traced extends TraceResult {
  mode: string;
  path: string[];
}

export interface Owned {
  owner: string;
  mode: string;
  count: number;
  yaml: string;
}

export interface MigrationReport {
  summary: Record<string, number>;
  entries: {
    object: ObjectRef;
    location?: string;
    outcome: string;
    notes: { kind: string; field?: string; message: string }[];
  }[];
  added: { object: ObjectRef; reason: string }[];
}

export async function get<T>(path: string, params: Record<string, string | string[]> = {}): Promise<T> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    for (const v of Array.isArray(value) ? value : [value]) query.append(name, v);
  const url = query.size > 0 ? `${path}?${query}` : path;
  const response = await fetch(url);
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `${url}: HTTP ${response.status}`);
  return body;
}

/** One mode's graph, and how many requests it was drawn from. */
export interface ModeGraph {
  mode: string;
  graph: SideBySide['sidecar'];
  requests: number;
  matrix: number;
}

export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}
