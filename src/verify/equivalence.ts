/**
 * `kfmesh verify --equivalence BEFORE AFTER`: the same matrix of requests traced on two configurations,
 * and every request whose outcome changed, grouped by cause. A request denied before and allowed after
 * is an error (the change opened access); a request that reached an application before and does not
 * after, or reaches another one, is a warning; other changes (a different refusal) are notes.
 *
 * A request that one workload's own sidecar refused and that another workload now answers is a warning
 * (it is routed elsewhere); refused anywhere else (a gateway, a waypoint, ztunnel), its destination is not
 * known, so being answered after is an error.
 *
 * The matrix: every client workload (one per namespace, service account, proxy and labels) plus an
 * external client, × every Service port that speaks HTTP (ExternalName Services on port 80) and every
 * host the ingress routes, × the paths the routes and policies mention, × the methods, headers and
 * token the policies mention; and every client × each workload's pod addressed directly (its address,
 * on each port its Services send to), × those methods, headers and tokens. A request to a pod skips
 * whatever serves only Services (a waypoint for `service` traffic); the pod counts as reached when its
 * address or one of its Services answers from it.
 */
import type { Snapshot } from '../load/snapshot.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { ClientClasses } from './client-classes.ts';
import type { Mesh } from '../mesh/compiled.ts';
import {
  changeSeverity,
  describeOutcome,
  outcomeOf,
  requestShapes,
  tracedOutcome,
  type MatrixRequest,
  type RequestOutcome,
  type RequestShape,
  type Severity,
} from './requests.ts';

export * from './requests.ts';

/** Requests whose outcome changed the same way. */
export interface ChangeGroup {
  severity: Severity;
  /** `before → after`, in words. */
  cause: string;
  count: number;
  /** Up to five of the requests, with both outcomes. */
  examples: { request: MatrixRequest; before: RequestOutcome; after: RequestOutcome }[];
}

/** The result of an equivalence check. */
export interface EquivalenceResult {
  requests: number;
  /** Traces made for the requests from workloads, both configurations (one per client class and request). */
  traces: number;
  unchanged: number;
  errors: number;
  warnings: number;
  notes: number;
  /** Errors first, then warnings, then notes; by count within each. */
  groups: ChangeGroup[];
}

/**
 * One slice of the request matrix: the request shapes (and external requests) whose place in the
 * matrix's order leaves `index` when divided by `count`. Slices of one count cover the matrix once.
 */
export interface Shard {
  index: number;
  count: number;
}

/** An example of a change, with its place in the matrix's order (which the merged report keeps). */
export interface OrderedExample {
  order: readonly [number, number];
  request: MatrixRequest;
  before: RequestOutcome;
  after: RequestOutcome;
}

/** What one slice of the matrix found: merged with the other slices' (`mergeEquivalence`), the report. */
export interface EquivalencePart {
  shard: Shard;
  /** Requests of the whole matrix. */
  requests: number;
  /** Requests of this slice. */
  sliceRequests: number;
  traces: number;
  unchanged: number;
  groups: { severity: Severity; cause: string; count: number; examples: OrderedExample[] }[];
}

export interface EquivalenceOptions {
  clusterDomain?: string;
  /** Trace only this slice of the matrix (the whole matrix without it). */
  shard?: Shard;
  /** Trace every request for every client, instead of one client per class (slower; the same result). */
  exhaustive?: boolean;
  /** Called now and then with the requests traced so far and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Called for every request whose outcome changed (each client of a class, not one per class). */
  onChange?: (
    request: MatrixRequest,
    before: RequestOutcome,
    after: RequestOutcome,
    severity: Severity,
  ) => void;
}

/** Traces the request matrix on both configurations and reports what changed. */
export function checkEquivalence(
  before: Snapshot,
  after: Snapshot,
  options: EquivalenceOptions = {},
): EquivalenceResult {
  return mergeEquivalence([checkEquivalencePart(before, after, options)]);
}

/**
 * Traces one slice of the request matrix (`options.shard`, else all of it) on both configurations. Each
 * request shape's outcomes depend on that shape alone, so the slices' counts add up to the whole matrix's
 * and their examples, put back in the matrix's order, are the whole matrix's first ones.
 */
export function checkEquivalencePart(
  before: Snapshot,
  after: Snapshot,
  options: EquivalenceOptions = {},
): EquivalencePart {
  const shard = options.shard ?? { index: 0, count: 1 };
  const matrix = new EquivalenceMatrix(before, after, options);
  return { shard, ...matrix.trace((unit) => unit % shard.count === shard.index, options) };
}

/**
 * The request matrix of two configurations, compiled once, traced in pieces: a piece is a set of units
 * (a unit is one request shape for every client, or one external request), numbered in the matrix's
 * order. `verify --jobs` hands runs of units to worker threads as they free up.
 */
export class EquivalenceMatrix {
  readonly #meshes: readonly [Mesh, Mesh];
  readonly #clients: readonly string[];
  readonly #shapes: readonly RequestShape[];
  readonly #external: readonly MatrixRequest[];
  readonly #classes: readonly [ClientClasses, ClientClasses];
  readonly #pairs: ClassPairs;

  constructor(before: Snapshot, after: Snapshot, options: EquivalenceOptions = {}) {
    const compile = (s: Snapshot) =>
      compileMesh(s, options.clusterDomain ? { clusterDomain: options.clusterDomain } : {});
    this.#meshes = [compile(before), compile(after)] as const;
    const { clients, shapes, pods, external } = requestShapes(this.#meshes[0], this.#meshes[1]);
    this.#clients = clients;
    this.#shapes = [...shapes, ...pods];
    this.#external = external;
    this.#classes = [
      new ClientClasses(this.#meshes[0], clients, options.exhaustive),
      new ClientClasses(this.#meshes[1], clients, options.exhaustive),
    ] as const;
    this.#pairs = new ClassPairs(this.#classes, clients.length);
  }

  /** How many units the matrix has. */
  get units(): number {
    return this.#shapes.length + this.#external.length;
  }

  /** Requests of the whole matrix. */
  get requests(): number {
    return this.#clients.length * this.#shapes.length + this.#external.length;
  }

  /** Traces the units `mine` selects; progress and changes go to the options' callbacks. */
  trace(
    mine: (unit: number) => boolean,
    options: Pick<EquivalenceOptions, 'onProgress' | 'onChange'> = {},
  ): Omit<EquivalencePart, 'shard'> {
    const [meshes, classes, clients] = [this.#meshes, this.#classes, this.#clients];
    const shapes = this.#shapes;
    const tracesBefore = classes[0].traces + classes[1].traces;
    const myShapes = shapes.filter((_, unit) => mine(unit)).length;
    const myExternal = this.#external.filter((_, e) => mine(shapes.length + e)).length;
    const total = clients.length * myShapes + myExternal;
    const changes = new Changes(meshes);
    let done = 0;
    shapes.forEach((shape, unit) => {
      if (!mine(unit)) return;
      const was = classes[0].outcomes((from) => tracedOutcome(meshes[0], { ...shape, from }));
      const now = classes[1].outcomes((from) => tracedOutcome(meshes[1], { ...shape, from }));
      const { counts, first, width } = this.#pairs.of(
        was.partition,
        now.partition,
        now.outcomes.length,
        was.outcomes.length,
      );
      for (let pair = 0; pair < counts.length; pair++) {
        const count = counts[pair] as number;
        if (count === 0) continue;
        const from = clients[first[pair] as number] as string;
        const before = was.outcomes[Math.floor(pair / width)] as RequestOutcome;
        const after = now.outcomes[pair % width] as RequestOutcome;
        changes.record({ from, ...shape }, before, after, [unit, pair], count);
      }
      if (options.onChange)
        eachChange(
          options.onChange,
          clients,
          shape,
          [classes[0].membership(was.partition), classes[1].membership(now.partition)],
          [was.outcomes, now.outcomes],
        );
      done += clients.length;
      if (options.onProgress && done % 5000 < clients.length) options.onProgress(done, total);
    });
    this.#external.forEach((request, e) => {
      if (!mine(shapes.length + e)) return;
      const [was, now] = [outcomeOf(meshes[0], request), outcomeOf(meshes[1], request)];
      changes.record(request, was, now, [shapes.length + e, 0]);
      const severity = changeSeverity(was, now);
      if (severity !== undefined) options.onChange?.(request, was, now, severity);
    });
    options.onProgress?.(total, total);
    return {
      requests: this.requests,
      sliceRequests: total,
      traces: classes[0].traces + classes[1].traces - tracesBefore,
      unchanged: changes.unchanged,
      groups: changes.groups(),
    };
  }
}

/**
 * The report of the whole matrix from its slices: one part per slice of one count, each once (throws
 * otherwise). Counts add up; each group keeps the matrix's first five examples.
 */
export function mergeEquivalence(parts: readonly EquivalencePart[]): EquivalenceResult {
  const count = parts[0]?.shard.count ?? 0;
  const indexes = parts.map((p) => p.shard.index).sort((a, b) => a - b);
  if (count === 0 || parts.some((p) => p.shard.count !== count) || indexes.some((i, k) => i !== k))
    throw new Error(
      `the parts must be the slices 0 to ${count - 1} of ${count}, each once; got ${parts.map((p) => `${p.shard.index}/${p.shard.count}`).join(', ')}`,
    );
  if (indexes.length !== count) throw new Error(`${count - indexes.length} slice(s) of ${count} missing`);
  return combinePieces(parts);
}

/**
 * The report of the whole matrix from pieces that cover it once (slices, or the runs of units worker
 * threads traced): counts add up, each group keeps the matrix's first five examples. Throws when the
 * pieces do not add up to the matrix.
 */
export function combinePieces(pieces: readonly Omit<EquivalencePart, 'shard'>[]): EquivalenceResult {
  const requests = pieces[0]?.requests ?? 0;
  if (pieces.some((p) => p.requests !== requests))
    throw new Error('the parts come from different request matrices (different configurations)');
  const groups = new Map<string, ChangeGroup & { ordered: OrderedExample[] }>();
  for (const piece of pieces)
    for (const g of piece.groups) {
      const group = groups.get(g.cause) ?? {
        severity: g.severity,
        cause: g.cause,
        count: 0,
        examples: [],
        ordered: [],
      };
      group.count += g.count;
      group.ordered.push(...g.examples);
      groups.set(g.cause, group);
    }
  const merged: ChangeGroup[] = [...groups.values()].map(({ ordered, ...group }) => ({
    ...group,
    examples: ordered
      .sort((a, b) => a.order[0] - b.order[0] || a.order[1] - b.order[1])
      .slice(0, examplesPerGroup)
      .map(({ request, before, after }) => ({ request, before, after })),
  }));
  const unchanged = pieces.reduce((n, p) => n + p.unchanged, 0);
  const changed = merged.reduce((n, g) => n + g.count, 0);
  if (unchanged + changed !== requests)
    throw new Error(`the parts cover ${unchanged + changed} of the matrix's ${requests} requests`);
  return summarize(
    merged,
    requests,
    unchanged,
    pieces.reduce((n, p) => n + p.traces, 0),
  );
}

/** Calls `onChange` for each client whose request of this shape changed, by the clients' classes on both sides. */
function eachChange(
  onChange: NonNullable<EquivalenceOptions['onChange']>,
  clients: readonly string[],
  shape: RequestShape,
  membership: readonly [ArrayLike<number>, ArrayLike<number>],
  outcomes: readonly [readonly RequestOutcome[], readonly RequestOutcome[]],
): void {
  for (let c = 0; c < clients.length; c++) {
    const before = outcomes[0][membership[0][c] as number] as RequestOutcome;
    const after = outcomes[1][membership[1][c] as number] as RequestOutcome;
    const severity = changeSeverity(before, after);
    if (severity !== undefined) onChange({ from: clients[c] as string, ...shape }, before, after, severity);
  }
}

/**
 * How many clients fall in each (before, after) pair of classes, and the first of them, by the pair of
 * partitions: computed once per pair of partitions, which recur from request to request.
 */
class ClassPairs {
  readonly #classes: readonly [ClientClasses, ClientClasses];
  readonly #clients: number;
  readonly #known = new Map<string, { counts: Int32Array; first: Int32Array; width: number }>();

  constructor(classes: readonly [ClientClasses, ClientClasses], clients: number) {
    this.#classes = classes;
    this.#clients = clients;
  }

  /** For partitions with `height` classes before and `width` after: the count and first client of each pair. */
  of(before: string, after: string, width: number, height: number) {
    const key = `${before}|${after}`;
    const known = this.#known.get(key);
    if (known) return known;
    const [b, a] = [this.#classes[0].membership(before), this.#classes[1].membership(after)];
    const counts = new Int32Array(height * width);
    const first = new Int32Array(counts.length).fill(-1);
    for (let c = 0; c < this.#clients; c++) {
      const pair = (b[c] as number) * width + (a[c] as number);
      if (counts[pair] === 0) first[pair] = c;
      counts[pair] = (counts[pair] as number) + 1;
    }
    const out = { counts, first, width };
    this.#known.set(key, out);
    return out;
  }
}

const examplesPerGroup = 5;

/** The changes found so far, grouped by cause, and how many requests did not change. */
class Changes {
  readonly #meshes: readonly [Mesh, Mesh];
  readonly #groups = new Map<string, EquivalencePart['groups'][number]>();
  unchanged = 0;

  constructor(meshes: readonly [Mesh, Mesh]) {
    this.#meshes = meshes;
  }

  /** `count` requests like `request`, at `order` in the matrix, went from `was` to `now`. */
  record(
    request: MatrixRequest,
    was: RequestOutcome,
    now: RequestOutcome,
    order: readonly [number, number],
    count = 1,
  ): void {
    const severity = changeSeverity(was, now);
    if (severity === undefined) {
      this.unchanged += count;
      return;
    }
    const cause = `${describeOutcome(was)} → ${describeOutcome(now)}${request.pod ? ' (addressed to the pod)' : ''}`;
    const group = this.#groups.get(cause) ?? { severity, cause, count: 0, examples: [] };
    group.count += count;
    // Recorded in the matrix's order: the first five are the slice's first. An example is traced for
    // its own client (a class's outcome came from another member's trace).
    if (group.examples.length < examplesPerGroup)
      group.examples.push({
        order,
        request,
        before: outcomeOf(this.#meshes[0], request),
        after: outcomeOf(this.#meshes[1], request),
      });
    this.#groups.set(cause, group);
  }

  groups(): EquivalencePart['groups'] {
    return [...this.#groups.values()];
  }
}

/** The result: groups with errors first, then warnings, then notes; by count within each. */
function summarize(
  groups: ChangeGroup[],
  requests: number,
  unchanged: number,
  traces: number,
): EquivalenceResult {
  const rank = { error: 0, warning: 1, note: 2 };
  const sorted = groups.sort(
    (a, b) =>
      rank[a.severity] - rank[b.severity] ||
      b.count - a.count ||
      (a.cause < b.cause ? -1 : a.cause > b.cause ? 1 : 0),
  );
  const count = (s: Severity) => sorted.filter((g) => g.severity === s).reduce((n, g) => n + g.count, 0);
  return {
    requests,
    traces,
    unchanged,
    errors: count('error'),
    warnings: count('warning'),
    notes: count('note'),
    groups: sorted,
  };
}
