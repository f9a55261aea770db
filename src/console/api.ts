/**
 * The console's JSON API, as pure answers over one snapshot: what it holds, the graphs of its traffic in
 * both modes, a trace in either mode, the analyzer's findings, the rendered objects in a mode, and the
 * migration report. Every answer is computed on first use and kept (the snapshot never changes; a reload
 * makes a new model). Read-only: nothing here writes anywhere.
 */
import { Snapshot } from '../load/snapshot.ts';
import { compareRefs, refOf, type KubeObject } from '../model/object.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { traceRequest } from '../mesh/trace.ts';
import { migrateToAmbient, type MigrationResult } from '../ambient/migrate.ts';
import { reportDocument } from '../ambient/migration-report.ts';
import { analyze, findingsDocument } from '../analyze/analyze.ts';
import { desiredState, MeshMode, type RenderResult } from '../render/desired-state.ts';
import { formatLocation, formatObjectProblem } from '../model/errors.ts';
import { toYaml } from '../load/serialize.ts';
import { shownObject } from './shown.ts';
import { graphsOf, tracePath } from './graph.ts';
import { observedGraph, type ObservedInput } from './observed.ts';
import { observedFindings } from './observed-findings.ts';
import type { Finding } from '../model/finding.ts';
import { PlanJob } from './plan-job.ts';
import {
  formatIstioVersion,
  NewestModelledVersion,
  OldestModelledVersion,
  parseIstioVersion,
} from '../mesh/istio-version.ts';
import type { Api, ApiError, NamespaceMode, PlanProgress, SideBySide, Summary } from './wire.ts';
import { namespaceStanding } from '../model/sidecar.ts';
import { isProfileNamespace } from '../kubeflow/profile.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { TraceInputError, readTraceRequest } from '../mesh/trace/request.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { chooseIstioVersion, type VersionChoice } from '../mesh/installed-version.ts';

/**
 * An answer: 200 with what the path answers (typed by the wire format), 202 with the plan's progress while
 * it is computed, or an error status and why.
 */
export type ConsoleAnswer =
  | { status: 200; body: Api[keyof Api] | SideBySide }
  | { status: 202; body: PlanProgress }
  | { status: 400 | 404 | 500; body: ApiError };

export interface ConsoleOptions {
  /** Where the snapshot came from, for the summary. */
  source: string;
  clusterDomain?: string;
  /** The Istio version (X.Y) the graphs and traces simulate unless a trace names another; default the newest modelled. */
  istioVersion?: string;
  /** The time findings judge certificates at (the shell's clock); none: validity is not checked. */
  now?: Date;
  /** Metrics the mesh reported, drawn over the graph of the platform as given. */
  observed?: ObservedInput;
}

const modes = [MeshMode.Sidecar, MeshMode.Ambient] as const;

/** Meshes of non-default Istio versions kept at once (each is a whole compiled platform). */
const otherVersionMeshes = 2;

export class ConsoleModel {
  readonly #snapshot: Snapshot;
  readonly #options: ConsoleOptions;
  readonly #cache = new Map<string, unknown>();
  /** Meshes of versions other than the default, least recently used first. */
  readonly #otherMeshes = new Map<string, Mesh>();
  /** The migration plan, computed by a worker from when it is first asked for. */
  #planJob: PlanJob | undefined;

  constructor(snapshot: Snapshot, options: ConsoleOptions) {
    this.#snapshot = snapshot;
    this.#options = options;
  }

  /** The answer to `GET path?params`. */
  async answer(path: string, params: URLSearchParams): Promise<ConsoleAnswer> {
    switch (path) {
      case '/api/summary':
        return ok<'/api/summary'>(this.#once('summary', () => this.#summary()));
      case '/api/graph': {
        const graphs = this.#once('graph', () => this.#graphs());
        if (!params.has('mode')) return { status: 200, body: graphs };
        const mode = modeParam(params);
        if (typeof mode !== 'string') return mode;
        return ok<'/api/graph'>({
          mode,
          graph: graphs[mode],
          requests: graphs.requests,
          matrix: graphs.matrix,
        });
      }
      case '/api/findings':
        return ok<'/api/findings'>(this.#once('findings document', () => this.#findingsDocument()));
      case '/api/observed': {
        const observed = this.#options.observed;
        if (!observed)
          return {
            status: 404,
            body: { error: 'no observed traffic: start the console with --metrics FILE or --prometheus URL' },
          };
        return ok<'/api/observed'>(this.#observed(observed));
      }
      case '/api/migration':
        return ok<'/api/migration'>(this.#once('report', () => reportDocument(this.#migration().report)));
      case '/api/render': {
        const mode = modeParam(params);
        if (typeof mode !== 'string') return mode;
        const { owned, ...rendered } = this.#render(mode);
        return ok<'/api/render'>(rendered);
      }
      case '/api/trace':
        return this.#trace(params);
      case '/api/objects':
        return this.#owned(params);
      case '/api/object':
        return this.#input(params);
      case '/api/plan':
        return this.#plan();
      case '/api/plan/graph':
        return this.#planGraph(params);
      default:
        return { status: 404, body: { error: `no such API: ${path}` } };
    }
  }

  /** Computes what the page asks for first (the summary, both graphs, the findings, what was observed), ahead of the request. */
  warm(): void {
    this.#summary();
    this.#graphs();
    this.#findings();
    const observed = this.#options.observed;
    if (observed) this.#observed(observed);
  }

  /** Stops the plan's worker, if one was started (a reload replaces this model, or the console closes). */
  async close(): Promise<void> {
    await this.#planJob?.close();
  }

  /**
   * The analyzer's findings on the platform as given, then, when the console was given metrics, those of
   * the traffic observed (drift, failing edges).
   */
  #findingsDocument(): Api['/api/findings'] {
    const observed = this.#options.observed;
    return findingsDocument([
      ...this.#findings(),
      ...(observed ? observedFindings(this.#mesh(MeshMode.Sidecar), this.#observed(observed)) : []),
    ]);
  }

  /** What the mesh reported, over the graph of the platform as given. */
  #observed(observed: ObservedInput): Api['/api/observed'] {
    return this.#once('observed', () =>
      observedGraph(this.#mesh(MeshMode.Sidecar), this.#findings(), observed),
    );
  }

  /** The analyzer's findings on the snapshot as given. */
  #findings(): Finding[] {
    return this.#once('findings', () =>
      analyze(this.#snapshot, {
        ...this.#domain(),
        ...(this.#options.now ? { now: this.#options.now } : {}),
      }),
    );
  }

  /**
   * The migration plan of the snapshot and its checks (every state is traced): started in a worker when
   * first asked for; until it is done, its progress (202).
   */
  #plan(): ConsoleAnswer {
    const status = this.#job().status();
    if (status.state === 'done') return ok<'/api/plan'>(status.view);
    if (status.state === 'failed') return { status: 500, body: { error: status.error } };
    return { status: 202, body: status.progress };
  }

  async #planGraph(params: URLSearchParams): Promise<ConsoleAnswer> {
    const status = this.#job().status();
    if (status.state !== 'done') return this.#plan();
    const states = status.view.steps.length + 1;
    const raw = params.get('step') ?? '';
    const step = Number(raw);
    if (!/^\d+$/.test(raw) || step >= states)
      return { status: 400, body: { error: `step must be a number from 0 to ${states - 1}` } };
    return ok<'/api/plan/graph'>(await this.#job().graph(step));
  }

  #job(): PlanJob {
    this.#planJob ??= new PlanJob(this.#snapshot.all(), this.#options.source, this.#options.clusterDomain);
    return this.#planJob;
  }

  #once<T>(key: string, compute: () => T): T {
    if (!this.#cache.has(key)) this.#cache.set(key, compute());
    return this.#cache.get(key) as T;
  }

  #domain(): { clusterDomain?: string } {
    return this.#options.clusterDomain ? { clusterDomain: this.#options.clusterDomain } : {};
  }

  #summary(): Summary {
    const kinds: Record<string, number> = {};
    const namespaces = new Set<string>();
    for (const o of this.#snapshot.all()) {
      kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
      if (o.metadata.namespace) namespaces.add(o.metadata.namespace);
      if (o.kind === 'Namespace' && o.apiVersion === 'v1') namespaces.add(o.metadata.name ?? '');
    }
    const names = (group: string, kind: string) =>
      this.#snapshot
        .list(`${group}/${kind}`)
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
      istio: formatIstioVersion(this.#standardVersion().version),
      istioFrom: this.#standardVersion().source,
      newestIstio: formatIstioVersion(NewestModelledVersion),
      oldestIstio: formatIstioVersion(OldestModelledVersion),
      ...(this.#options.observed ? { observed: this.#options.observed.source } : {}),
      clients: this.#mesh(MeshMode.Sidecar)
        .workloads.map((w) => `${w.namespace}/${w.name}`)
        .sort(),
    };
  }

  /** The version the console simulates unless a request names another: `--istio-version`, else the input's. */
  #standardVersion(): VersionChoice {
    return this.#once('version', () =>
      chooseIstioVersion(this.#snapshot, parseIstioVersion(this.#options.istioVersion ?? '')),
    );
  }

  /**
   * The platform's mesh in a mode (ambient: its migration), as an Istio version behaves (default: the
   * console's version, `#standardVersion`). The default version's meshes are kept; meshes of other versions (a trace naming
   * one) are kept for the last `otherVersionMeshes` asked, so memory stays bounded whatever is asked.
   */
  #mesh(mode: MeshMode, istio = ''): Mesh {
    const standard = this.#standardVersion().version;
    const version = parseIstioVersion(istio) ?? standard;
    const compile = () => {
      const options = { ...this.#domain(), istioVersion: version };
      return mode === MeshMode.Sidecar
        ? compileMesh(this.#snapshot, options)
        : compileMesh(this.#migrated(), options);
    };
    // Keyed by the version it stands for, so naming the default version compiles nothing more.
    const key = `${mode} ${formatIstioVersion(version)}`;
    if (formatIstioVersion(version) === formatIstioVersion(standard))
      return this.#once(`mesh ${key}`, compile);
    let mesh = this.#otherMeshes.get(key);
    if (mesh) this.#otherMeshes.delete(key);
    else mesh = compile();
    this.#otherMeshes.set(key, mesh);
    for (const oldest of this.#otherMeshes.keys()) {
      if (this.#otherMeshes.size <= otherVersionMeshes) break;
      this.#otherMeshes.delete(oldest);
    }
    return mesh;
  }

  /** How many meshes of other versions than the default are kept (least recently used dropped first). */
  get cachedOtherMeshes(): number {
    return this.#otherMeshes.size;
  }

  #migration(): MigrationResult {
    return this.#once('migration', () => migrateToAmbient(this.#snapshot, this.#domain()));
  }

  /** The migration's objects as a snapshot (the ambient meshes are compiled from it). */
  #migrated(): Snapshot {
    return this.#once('migrated', () => Snapshot.of(this.#migration().objects, '<migrated>'));
  }

  /** Both graphs, each with its namespaces' modes (the ambient one's with why a namespace stays in sidecar mode). */
  #graphs(): SideBySide {
    const graphs = graphsOf(this.#mesh(MeshMode.Sidecar), this.#mesh(MeshMode.Ambient));
    const migration = this.#migration();
    return {
      ...graphs,
      sidecar: { ...graphs.sidecar, namespaces: namespaceModes(this.#snapshot) },
      ambient: {
        ...graphs.ambient,
        namespaces: namespaceModes(this.#migrated(), migration.kept),
      },
    };
  }

  #render(mode: MeshMode): {
    mode: MeshMode;
    objects: KubeObject[];
    problems: string[];
    owned: RenderResult['owned'];
  } {
    return this.#once(`render ${mode}`, () => {
      const result = desiredState(this.#snapshot, { mode, ...this.#domain() });
      return {
        mode,
        objects: result.objects,
        problems: result.problems.map((p) => formatObjectProblem(p)),
        owned: result.owned,
      };
    });
  }

  /** The rendered objects of one InferenceService or Profile in a mode, as YAML (`owner=KIND/NAMESPACE/NAME`). */
  #owned(params: URLSearchParams): ConsoleAnswer {
    const mode = modeParam(params);
    if (typeof mode !== 'string') return mode;
    const owner = params.get('owner') ?? '';
    const [kind = '', namespace = '', ...rest] = owner.split('/');
    const name = rest.join('/');
    const owned = this.#render(mode).owned;
    const objects =
      kind === 'InferenceService'
        ? owned.inferenceServices.get(`${namespace}/${name}`)
        : kind === 'Profile' && namespace === ''
          ? owned.profiles.get(name)
          : undefined;
    if (!objects)
      return {
        status: 404,
        body: { error: `no InferenceService NAMESPACE/NAME or Profile /NAME: ${JSON.stringify(owner)}` },
      };
    const sorted = [...objects].sort((a, b) => compareRefs(refOf(a), refOf(b)));
    return ok<'/api/objects'>({ owner, mode, count: sorted.length, yaml: toYaml(sorted) });
  }

  /**
   * One input object as YAML (`kind`, `name`, and `group`, `namespace` where it has them), without what
   * the console does not show (`shown.ts`: tenants' ConfigMap data, env values, other annotations).
   */
  #input(params: URLSearchParams): ConsoleAnswer {
    const [group, kind, namespace, name] = ['group', 'kind', 'namespace', 'name'].map(
      (p) => params.get(p) ?? '',
    ) as [string, string, string, string];
    const object = this.#snapshot.get(`${group}/${kind}`, namespace, name);
    if (!object)
      return {
        status: 404,
        body: { error: `no ${kind} ${namespace ? `${namespace}/` : ''}${name} in ${this.#options.source}` },
      };
    const location = this.#snapshot.locate(object);
    const shown = shownObject(object);
    return ok<'/api/object'>({
      yaml: toYaml([shown.object]),
      hidden: shown.hidden,
      ...(location ? { location: formatLocation(location) } : {}),
    });
  }

  #trace(params: URLSearchParams): ConsoleAnswer {
    const mode = modeParam(params);
    if (typeof mode !== 'string') return mode;
    try {
      const { input } = readTraceRequest(
        {
          from: params.get('from'),
          url: params.get('url'),
          method: params.get('method'),
          headers: params.getAll('header'),
          istio: params.get('istio'),
        },
        { from: 'from', url: 'url', header: 'header', istio: 'istio' },
      );
      const istio = params.get('istio') ?? '';
      const result = traceRequest(this.#mesh(mode, istio), input);
      return ok<'/api/trace'>({ mode, ...(istio ? { istio } : {}), ...result, path: tracePath(result) });
    } catch (error) {
      if (error instanceof TraceInputError) return { status: 400, body: { error: error.message } };
      throw error;
    }
  }
}

/**
 * Each namespace's mode by its labels, with why it stays in sidecar mode when the migration keeps it there, and
 * whether it is a user's (a Profile's).
 */
function namespaceModes(snapshot: Snapshot, kept?: ReadonlyMap<string, { why: string }>): NamespaceMode[] {
  return snapshot.list(GroupKind.Namespace).map((ns) => {
    const name = ns.metadata.name ?? '';
    const why = kept?.get(name)?.why;
    return {
      name,
      mode: namespaceStanding(ns.metadata.labels ?? {}),
      ...(why ? { why: `stays in sidecar mode: it ${why}` } : {}),
      ...(isProfileNamespace(snapshot, ns) ? { profile: true } : {}),
    };
  });
}

/** 200 with what path `P` answers. */
function ok<P extends keyof Api>(body: Api[P]): ConsoleAnswer {
  return { status: 200, body };
}

function modeParam(params: URLSearchParams): MeshMode | ConsoleAnswer {
  const mode = params.get('mode') ?? MeshMode.Sidecar;
  return (modes as readonly string[]).includes(mode)
    ? (mode as MeshMode)
    : { status: 400, body: { error: `mode must be sidecar or ambient, got ${JSON.stringify(mode)}` } };
}
