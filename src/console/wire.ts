/**
 * The console's wire format: what its JSON API answers, typed once for the server (console/api.ts) and
 * the page (ui/), so the page never imports the simulator or the analyzer.
 */
import type { TraceResult } from '../model/trace-result.ts';

export interface GraphNode {
  id: string;
  kind: 'workload' | 'gateway' | 'waypoint' | 'external' | 'passthrough' | 'blackhole';
  namespace?: string;
  name: string;
}

/** How the requests over an edge ended, counted once per request on every edge of its path. */
export interface EdgeCounts {
  requests: number;
  allowed: number;
  denied: number;
  failed: number;
  /** Requests whose path ends in PassthroughCluster (they left the mesh: no identity, no policy). */
  passthrough: number;
  blackhole: number;
  /** Requests that crossed this edge over mutual TLS. */
  mtls: number;
}

export interface GraphEdge extends EdgeCounts {
  source: string;
  target: string;
  /** Where the request was denied, when it was denied on entering `target` (a policy, or the proxy). */
  deniedBy?: string;
}

export interface MeshGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  totals: EdgeCounts & { untraceable: number };
  /** Each namespace's data-plane mode in this graph's configuration (the mode graphs have them). */
  namespaces?: NamespaceMode[];
}

/** A namespace's data-plane mode by its labels, and, after the migration, why it stays in sidecar mode. */
export interface NamespaceMode {
  name: string;
  /** `sidecar`, `ambient`, `ambient with injection still on` or `outside the mesh`. */
  mode: string;
  why?: string;
  /** A user's namespace (a Profile's): the map draws it in the users' row. */
  profile?: boolean;
}

/** The same platform in sidecar mode (as given) and in ambient mode (its migration), drawn from the same requests. */
export interface SideBySide {
  sidecar: MeshGraph;
  ambient: MeshGraph;
  /** How many requests each graph was drawn from. */
  requests: number;
  /** How many requests the whole matrix has (more than `requests` when it was sampled). */
  matrix: number;
}

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
  /** Where the default version comes from (`--istio-version`, istiod's image, …). */
  istioFrom: string;
  newestIstio: string;
  oldestIstio: string;
  /** Where observed metrics come from, when the console was given some. */
  observed?: string;
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
  /** Observed traffic the finding is about (KFM801, KFM802): its edge on the graph. */
  traffic?: { source: string; target: string };
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

/** One mode's graph, and how many requests it was drawn from. */
export interface ModeGraph {
  mode: string;
  graph: SideBySide['sidecar'];
  requests: number;
  matrix: number;
}

/** One input object as YAML, with where it was read from. */
export interface InputObject {
  yaml: string;
  /** What the console left out of the object, one line each (console/shown.ts). */
  hidden: string[];
  location?: string;
}

/** The rendered objects of a mode, and the objects that could not be rendered (as messages). */
export interface RenderedMode {
  mode: string;
  objects: unknown[];
  problems: string[];
}

/** One step of the migration plan, and what its state gave against the start. */
export interface PlanStepView {
  number: number;
  id: string;
  stage: string;
  title: string;
  namespaces: string[];
  /** What the step changes, one line each. */
  changes: string[];
  /** Whether its state is simulated yet (the counts below are 0 until it is). */
  simulated: boolean;
  errors: number;
  warnings: number;
  notes: number;
  /** How requests answer differently in its state than at the start, one line per way, errors first. */
  differences: PlanDifferenceView[];
}

/** Requests whose outcome changed the same way between the start and a state of the plan. */
export interface PlanDifferenceView {
  severity: 'error' | 'warning' | 'note';
  /** `at the start → in this state`, in words. */
  cause: string;
  count: number;
  example: string;
}

/** Requests answered at the start, refused from step `from` to step `to`, answered again after. */
export interface OutageWindowView {
  from: number;
  to: number;
  count: number;
  cause: string;
  example: string;
}

/** The migration plan (`kfmesh migrate --plan`): its steps and what every state gave. */
export interface PlanView {
  groups: string[][];
  errors: number;
  steps: PlanStepView[];
  windows: OutageWindowView[];
}

/**
 * The plan while the server computes it (`/api/plan` answers 202 with this until the plan is done): what
 * it is doing, as `kfmesh migrate --plan` prints it, and the steps once their order is chosen.
 */
export interface PlanProgress {
  doing: string;
  /** States simulated so far, of `total` (the plan's steps; 0 while the order is chosen). */
  simulated: number;
  total: number;
  steps: PlanStepView[];
  /** Seconds since the plan was asked for. */
  seconds: number;
}

/** The graph of the state after a step of the plan (0: the start), and the edges whose traffic the step changed. */
export interface PlanGraph {
  step: number;
  graph: MeshGraph;
  requests: number;
  matrix: number;
  /** `source target` of each edge whose requests, or how they ended, differ from the state before the step. */
  changed: string[];
}

/** How observed requests over an edge ended, by class of response code (TCP connections apart). */
export interface ObservedCounts {
  /** HTTP requests the mesh reported (one reporter's count: the client's where it reported, else the server's). */
  requests: number;
  /** Responses by class: `2xx`, `3xx`, `4xx`, `5xx`, and `other` (0: no response). */
  codes: Record<string, number>;
  /** TCP connections opened. */
  connections: number;
  /** Series over the edge that this configuration does not produce (drift). */
  drift: number;
}

/** One observed series over an edge, and what explains it. */
export interface ObservedSeriesView {
  metric: string;
  reporter: string;
  value: number;
  /** Requests or connections a second, when the counts are over a known window. */
  rate?: number;
  /** The series' labels that say most: response code and flags, mTLS, the service. */
  labels: Record<string, string>;
  /** Where it was read: `file:line`, or the query's result number. */
  at: string;
  status: 'explained' | 'drift' | 'untraced';
  /** Explained: the request whose trace produces it, and the trace's summary. */
  request?: string;
  summary?: string;
  /** The analyzer finding it is put down to, with its fix and `kubectl patch`. */
  finding?: { code: string; object: string; field?: string; message: string; fix?: string; patch?: string };
  /** Drift: the labels on which the nearest trace differs (`label: observed, configuration: configured`). */
  differences?: string[];
  /** Untraced: why. */
  reason?: string;
}

/** Observed traffic between two graph nodes. */
export interface ObservedEdge extends ObservedCounts {
  source: string;
  target: string;
  rate?: number;
  series: ObservedSeriesView[];
}

/** What the mesh reported (`serve --metrics` or `--prometheus`), drawn over the graph of the platform as given. */
export interface ObservedGraph {
  /** Where the metrics came from. */
  source: string;
  /** The window's length in seconds, when known (a Prometheus query; a file's counters have none). */
  seconds?: number;
  edges: ObservedEdge[];
  /** Nodes of observed edges that the configuration's graph lacks (drift: a workload it does not know). */
  nodes: GraphNode[];
  summary: { explained: number; drift: number; untraced: number };
}

/** What an API refused, and why. */
export interface ApiError {
  error: string;
}

/**
 * Each path of the API and what it answers (200). `/api/graph` answers one mode's graph when asked with
 * `mode`, which the page always gives; without it, both (`SideBySide`).
 */
export interface Api {
  '/api/summary': Summary;
  '/api/graph': ModeGraph;
  '/api/findings': Findings;
  '/api/migration': MigrationReport;
  '/api/render': RenderedMode;
  '/api/trace': Traced;
  '/api/objects': Owned;
  '/api/object': InputObject;
  '/api/plan': PlanView;
  '/api/plan/graph': PlanGraph;
  '/api/observed': ObservedGraph;
}
