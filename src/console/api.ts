/**
 * The console's JSON API, as pure answers over one snapshot: what it holds, the graphs of its traffic in
 * both modes, a trace in either mode, the analyzer's findings, the rendered objects in a mode, and the
 * migration report. Every answer is computed on first use and kept (the snapshot never changes; a reload
 * makes a new model). Read-only: nothing here writes anywhere.
 */
import { Snapshot } from '../load/snapshot.ts';
import { compileMesh, type Mesh } from '../mesh/mesh.ts';
import { parseHeaderLine, traceRequest, TraceInputError } from '../mesh/trace.ts';
import { migrateToAmbient, type MigrationResult } from '../ambient/migrate.ts';
import { analyze, findingsDocument } from '../analyze/analyze.ts';
import { desiredState, MeshMode } from '../render/desired-state.ts';
import { formatObjectProblem } from '../model/errors.ts';
import { graphsOf, type SideBySide } from './graph.ts';

export interface ConsoleAnswer {
  status: number;
  body: unknown;
}

export interface ConsoleOptions {
  /** Where the snapshot came from, for the summary. */
  source: string;
  clusterDomain?: string;
}

const modes = [MeshMode.Sidecar, MeshMode.Ambient] as const;

export class ConsoleModel {
  readonly #snapshot: Snapshot;
  readonly #options: ConsoleOptions;
  readonly #cache = new Map<string, unknown>();

  constructor(snapshot: Snapshot, options: ConsoleOptions) {
    this.#snapshot = snapshot;
    this.#options = options;
  }

  /** The answer to `GET path?params`. */
  answer(path: string, params: URLSearchParams): ConsoleAnswer {
    switch (path) {
      case '/api/summary':
        return ok(this.#once('summary', () => this.#summary()));
      case '/api/graph':
        return ok(this.#once('graph', () => this.#graphs()));
      case '/api/findings':
        return ok(this.#once('findings', () => findingsDocument(analyze(this.#snapshot, this.#domain()))));
      case '/api/migration':
        return ok(this.#migration().report);
      case '/api/render': {
        const mode = modeParam(params);
        if (typeof mode !== 'string') return mode;
        return ok(this.#once(`render ${mode}`, () => this.#render(mode)));
      }
      case '/api/trace':
        return this.#trace(params);
      default:
        return { status: 404, body: { error: `no such API: ${path}` } };
    }
  }

  #once<T>(key: string, compute: () => T): T {
    if (!this.#cache.has(key)) this.#cache.set(key, compute());
    return this.#cache.get(key) as T;
  }

  #domain(): { clusterDomain?: string } {
    return this.#options.clusterDomain ? { clusterDomain: this.#options.clusterDomain } : {};
  }

  #summary(): Record<string, unknown> {
    const kinds: Record<string, number> = {};
    const namespaces = new Set<string>();
    for (const o of this.#snapshot.all()) {
      kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
      if (o.metadata.namespace) namespaces.add(o.metadata.namespace);
    }
    const names = (group: string, kind: string) =>
      this.#snapshot
        .list(group, kind)
        .map((o) =>
          o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ''),
        )
        .sort();
    return {
      source: this.#options.source,
      objects: this.#snapshot.all().length,
      kinds: Object.fromEntries(Object.entries(kinds).sort(([a], [b]) => a.localeCompare(b))),
      namespaces: [...namespaces].sort(),
      inferenceServices: names('serving.kserve.io', 'InferenceService'),
      profiles: names('kubeflow.org', 'Profile'),
      clients: this.#mesh(MeshMode.Sidecar)
        .workloads.map((w) => `${w.namespace}/${w.name}`)
        .sort(),
    };
  }

  #mesh(mode: MeshMode): Mesh {
    return this.#once(`mesh ${mode}`, () =>
      mode === MeshMode.Sidecar
        ? compileMesh(this.#snapshot, this.#domain())
        : compileMesh(Snapshot.of(this.#migration().objects, '<migrated>'), this.#domain()),
    );
  }

  #migration(): MigrationResult {
    return this.#once('migration', () => migrateToAmbient(this.#snapshot, this.#domain()));
  }

  #graphs(): SideBySide {
    return graphsOf(this.#mesh(MeshMode.Sidecar), this.#mesh(MeshMode.Ambient));
  }

  #render(mode: MeshMode): Record<string, unknown> {
    const result = desiredState(this.#snapshot, { mode, ...this.#domain() });
    return {
      mode,
      objects: result.objects,
      problems: result.problems.map((p) => formatObjectProblem(p)),
    };
  }

  #trace(params: URLSearchParams): ConsoleAnswer {
    const mode = modeParam(params);
    if (typeof mode !== 'string') return mode;
    const from = params.get('from');
    const url = params.get('url');
    if (!from || !url)
      return { status: 400, body: { error: 'give from (NAMESPACE/WORKLOAD or external) and url' } };
    const headers: Record<string, string> = {};
    for (const h of params.getAll('header')) {
      const header = parseHeaderLine(h);
      if (!header)
        return { status: 400, body: { error: `header ${JSON.stringify(h)}: write 'Name: value'` } };
      headers[header[0]] = header[1];
    }
    try {
      const result = traceRequest(this.#mesh(mode), {
        from,
        url,
        method: (params.get('method') ?? 'GET').toUpperCase(),
        headers,
      });
      return ok({ mode, ...result });
    } catch (error) {
      if (error instanceof TraceInputError) return { status: 400, body: { error: error.message } };
      throw error;
    }
  }
}

function ok(body: unknown): ConsoleAnswer {
  return { status: 200, body };
}

function modeParam(params: URLSearchParams): MeshMode | ConsoleAnswer {
  const mode = params.get('mode') ?? MeshMode.Sidecar;
  return (modes as readonly string[]).includes(mode)
    ? (mode as MeshMode)
    : { status: 400, body: { error: `mode must be sidecar or ambient, got ${JSON.stringify(mode)}` } };
}
