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
import type { IstioVersion } from '../mesh/istio-version.ts';
import { at } from '../model/checked.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { ClientClasses } from './client-classes.ts';
import { NamespaceSymmetry, type Swap } from './symmetry.ts';
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
  type ChangeSeverity,
} from './requests.ts';

export * from './requests.ts';
export * from './report.ts';
import {
  examplesPerGroup,
  mergeEquivalence,
  type EquivalencePart,
  type EquivalenceResult,
  type OrderedExample,
  type Shard,
} from './report.ts';
import { ClassPairs } from './class-pairs.ts';

export interface EquivalenceOptions {
  clusterDomain?: string;
  /** The Istio version to simulate on both sides (default: each side's own). */
  istioVersion?: IstioVersion;
  /** Trace only this slice of the matrix (the whole matrix without it). */
  shard?: Shard;
  /** Trace every request for every client, instead of one client per class (slower; the same result). */
  exhaustive?: boolean;
  /**
   * Take the outcomes of requests to a namespace from those to another namespace alike up to renaming
   * (default true; off with `exhaustive`). The same result.
   */
  symmetry?: boolean;
  /** Called now and then with the requests traced so far and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Called for every request whose outcome changed (each client of a class, not one per class). */
  onChange?: (
    request: MatrixRequest,
    before: RequestOutcome,
    after: RequestOutcome,
    severity: ChangeSeverity,
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
  readonly #symmetry: NamespaceSymmetry | undefined;
  /** Each shape's unit, by the text of its `shapeParts` (with symmetry). */
  readonly #unitByKey = new Map<string, number>();
  /** The units traced so far (with symmetry, whose outcomes others may take). */
  readonly #traced = new Map<number, UnitOutcomes>();
  /** Each external request, by the text of its `shapeParts` (with symmetry). */
  readonly #externalByKey = new Map<string, number>();
  readonly #tracedExternal = new Map<number, ExternalOutcomes>();

  constructor(before: Snapshot, after: Snapshot, options: EquivalenceOptions = {}) {
    const compile = (s: Snapshot) =>
      compileMesh(s, {
        ...(options.clusterDomain ? { clusterDomain: options.clusterDomain } : {}),
        ...(options.istioVersion ? { istioVersion: options.istioVersion } : {}),
      });
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
    const symmetric = options.symmetry !== false && options.exhaustive !== true;
    this.#symmetry = symmetric ? new NamespaceSymmetry(this.#meshes, clients) : undefined;
    if (this.#symmetry?.classes.length) {
      this.#shapes.forEach((shape, unit) => this.#unitByKey.set(shapeParts(shape).join(' '), unit));
      this.#external.forEach((request, e) => this.#externalByKey.set(shapeParts(request).join(' '), e));
    }
  }

  /** How many units the matrix has. */
  get units(): number {
    return this.#shapes.length + this.#external.length;
  }

  /** Requests of the whole matrix. */
  get requests(): number {
    return this.#clients.length * this.#shapes.length + this.#external.length;
  }

  /** The classes of namespaces alike up to renaming (none without symmetry). */
  get namespaceClasses(): readonly (readonly string[])[] {
    return this.#symmetry?.classes ?? [];
  }

  /** Traces the units `mine` selects; progress and changes go to the options' callbacks. */
  trace(
    mine: (unit: number) => boolean,
    options: Pick<EquivalenceOptions, 'onProgress' | 'onChange'> = {},
  ): Omit<EquivalencePart, 'shard'> {
    const [meshes, clients, shapes] = [this.#meshes, this.#clients, this.#shapes];
    const myShapes = shapes.filter((_, unit) => mine(unit)).length;
    const myExternal = this.#external.filter((_, e) => mine(shapes.length + e)).length;
    const total = clients.length * myShapes + myExternal;
    const changes = new Changes(meshes, clients);
    let [done, traces] = [0, 0];
    shapes.forEach((shape, unit) => {
      if (!mine(unit)) return;
      const outcomes = this.#outcomes(unit);
      traces += outcomes.traces;
      changes.recordUnit(unit, shape, outcomes);
      if (options.onChange) eachChange(options.onChange, clients, shape, outcomes);
      done += clients.length;
      if (options.onProgress && done % 5000 < clients.length) options.onProgress(done, total);
    });
    this.#external.forEach((request, e) => {
      if (!mine(shapes.length + e)) return;
      const { was, now, rename } = this.#externalOutcomes(e);
      const severity = changes.record(request, was, now, [shapes.length + e, 0], rename);
      if (severity !== undefined && options.onChange)
        options.onChange(request, ...outcomesOf({ rename }, { before: was, after: now }), severity);
    });
    options.onProgress?.(total, total);
    return {
      requests: this.requests,
      sliceRequests: total,
      traces,
      unchanged: changes.unchanged,
      groups: changes.groups(),
    };
  }

  /**
   * A shape's outcomes for every client: taken from a shape alike up to renaming when the symmetry has
   * one (with no traces of its own), else traced.
   */
  #outcomes(unit: number): UnitOutcomes {
    const known = this.#traced.get(unit);
    if (known) return known;
    const shape = at(this.#shapes, unit);
    const alike = this.#alike(shape, this.#unitByKey, unit);
    if (alike) return swapped(this.#outcomes(alike.other), alike.swap);
    const outcomes = this.#trace(shape);
    if (this.#symmetry) this.#traced.set(unit, outcomes);
    return outcomes;
  }

  /**
   * The request (by its index in `byKey`) that the symmetry's swap makes of this one, one step toward the
   * first members of classes; undefined when there is none or the matrix lacks it.
   */
  #alike(
    request: RequestShape,
    byKey: ReadonlyMap<string, number>,
    self: number,
  ): { swap: Swap; other: number } | undefined {
    if (!this.#symmetry) return undefined;
    const parts = shapeParts(request);
    const swap = this.#symmetry.swapFor(parts);
    const other = swap ? byKey.get(parts.map(swap.text).join(' ')) : undefined;
    return swap && other !== undefined && other !== self ? { swap, other } : undefined;
  }

  /** An external request's outcomes, taken from a request alike up to renaming when there is one. */
  #externalOutcomes(e: number): ExternalOutcomes {
    const known = this.#tracedExternal.get(e);
    if (known) return known;
    const request = at(this.#external, e);
    const alike = this.#alike(request, this.#externalByKey, e);
    if (alike) {
      const { was, now, rename } = this.#externalOutcomes(alike.other);
      const swap = alike.swap;
      return { was, now, rename: rename ? (s) => swap.text(rename(s)) : swap.text };
    }
    const meshes = this.#meshes;
    const outcomes = { was: outcomeOf(meshes[0], request), now: outcomeOf(meshes[1], request) };
    if (this.#symmetry) this.#tracedExternal.set(e, outcomes);
    return outcomes;
  }

  #trace(shape: RequestShape): UnitOutcomes {
    const [meshes, classes] = [this.#meshes, this.#classes];
    const tracesBefore = classes[0].traces + classes[1].traces;
    const was = classes[0].outcomes((from) => tracedOutcome(meshes[0], { ...shape, from }));
    const now = classes[1].outcomes((from) => tracedOutcome(meshes[1], { ...shape, from }));
    const { counts, first, width } = this.#pairs.of(
      was.partition,
      now.partition,
      now.outcomes.length,
      was.outcomes.length,
    );
    const pairs: OutcomePair[] = [];
    const place = new Int32Array(counts.length).fill(-1);
    for (let pair = 0; pair < counts.length; pair++) {
      const count = at(counts, pair);
      if (count === 0) continue;
      place[pair] = pairs.length;
      pairs.push({
        count,
        first: at(first, pair),
        before: at(was.outcomes, Math.floor(pair / width)),
        after: at(now.outcomes, pair % width),
      });
    }
    const [before, after] = [classes[0].membership(was.partition), classes[1].membership(now.partition)];
    return {
      pairs,
      traces: classes[0].traces + classes[1].traces - tracesBefore,
      pairOf: (c) => at(place, at(before, c) * width + at(after, c)),
    };
  }
}

/**
 * What one shape came to for every client: the distinct (before, after) outcome pairs, how many clients
 * each, and each client's pair.
 */
interface UnitOutcomes {
  pairs: readonly OutcomePair[];
  /** The traces made for this shape (none when taken from another). */
  traces: number;
  /** The index in `pairs` of a client's pair (by the client's index). */
  pairOf(client: number): number;
  /**
   * Set when the outcomes were taken from a shape alike up to renaming: `pairs` are that shape's
   * (their `first` clients too), and this renames their texts.
   */
  rename?: (text: string) => string;
}

/** An external request's outcomes (taken from another request's when `rename` is set). */
interface ExternalOutcomes {
  was: RequestOutcome;
  now: RequestOutcome;
  /** Set when taken from another request: renames its outcomes' texts. */
  rename?: (text: string) => string;
}

interface OutcomePair {
  count: number;
  /** The first client (by index) with this pair. */
  first: number;
  before: RequestOutcome;
  after: RequestOutcome;
}

/**
 * A request's text for the symmetry, in parts that recur (origin, path, method, headers): a pod by its name
 * (its address is the simulator's, not the configuration's).
 */
function shapeParts(shape: RequestShape): string[] {
  const url =
    shape.pod === undefined ? shape.url : shape.url.replace(/^http:\/\/[^:/]+/, `pod://${shape.pod}`);
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  let headers = headerTexts.get(shape.headers);
  if (headers === undefined) {
    headers = JSON.stringify(shape.headers);
    headerTexts.set(shape.headers, headers);
  }
  return slash < 0
    ? [url, '', shape.method, headers]
    : [url.slice(0, slash), url.slice(slash), shape.method, headers];
}

/** Header sets as text (the matrix's shapes share a few header sets). */
const headerTexts = new WeakMap<object, string>();

/** The outcomes of the shape a swap makes of another, from that shape's: renamed, clients swapped. */
function swapped(of: UnitOutcomes, swap: Swap): UnitOutcomes {
  const before = of.rename;
  return {
    pairs: of.pairs,
    traces: 0,
    pairOf: (c) => of.pairOf(swap.client(c)),
    rename: before ? (s) => swap.text(before(s)) : swap.text,
  };
}

/** A pair's outcomes as they are for the unit (renamed when taken from another). */
function outcomesOf(
  unit: Pick<UnitOutcomes, 'rename'>,
  pair: Pick<OutcomePair, 'before' | 'after'>,
): [RequestOutcome, RequestOutcome] {
  const rename = unit.rename;
  return rename ? [renamed(pair.before, rename), renamed(pair.after, rename)] : [pair.before, pair.after];
}

/** An outcome renamed (its summary when read). */
function renamed(o: RequestOutcome, rename: (s: string) => string): RequestOutcome {
  const out: RequestOutcome = {
    verdict: o.verdict,
    code: o.code,
    get summary() {
      return rename(o.summary);
    },
  };
  if (o.answeredBy !== undefined) out.answeredBy = rename(o.answeredBy);
  if (o.where !== undefined) out.where = rename(o.where);
  if (o.refusedBy !== undefined) out.refusedBy = rename(o.refusedBy);
  return out;
}

/** Calls `onChange` for each client whose request of this shape changed. */
function eachChange(
  onChange: NonNullable<EquivalenceOptions['onChange']>,
  clients: readonly string[],
  shape: RequestShape,
  outcomes: UnitOutcomes,
): void {
  const pairs = outcomes.pairs.map((p) => outcomesOf(outcomes, p));
  for (let c = 0; c < clients.length; c++) {
    const [before, after] = at(pairs, outcomes.pairOf(c));
    const severity = changeSeverity(before, after);
    if (severity !== undefined) onChange({ from: at(clients, c), ...shape }, before, after, severity);
  }
}

/** The changes found so far, grouped by cause, and how many requests did not change. */
class Changes {
  readonly #meshes: readonly [Mesh, Mesh];
  readonly #clients: readonly string[];
  readonly #groups = new Map<string, EquivalencePart['groups'][number]>();
  unchanged = 0;

  constructor(meshes: readonly [Mesh, Mesh], clients: readonly string[]) {
    this.#meshes = meshes;
    this.#clients = clients;
  }

  /**
   * A request at `order` in the matrix went from `was` to `now` (renamed by `rename` when taken from a
   * request alike: renaming keeps outcomes equal or unequal, so the severity is theirs). Its severity.
   */
  record(
    request: MatrixRequest,
    was: RequestOutcome,
    now: RequestOutcome,
    order: readonly [number, number],
    rename?: (text: string) => string,
  ): ChangeSeverity | undefined {
    const severity = changeSeverity(was, now);
    if (severity === undefined) {
      this.unchanged++;
      return severity;
    }
    const group = this.#group(causeOf(was, now, request.pod !== undefined, rename), severity);
    group.count++;
    if (group.examples.length < examplesPerGroup)
      group.examples.push(this.#example(request, order, rename !== undefined, group.cause));
    return severity;
  }

  /**
   * One shape's outcomes for every client. Its examples are its changed requests in the matrix's order
   * (by client): the first client of each pair of outcomes.
   */
  recordUnit(unit: number, shape: RequestShape, outcomes: UnitOutcomes): void {
    const wanting: number[] = [];
    const causes: string[] = [];
    outcomes.pairs.forEach((p, k) => {
      const severity = changeSeverity(p.before, p.after);
      if (severity === undefined) {
        this.unchanged += p.count;
        return;
      }
      causes[k] = causeOf(p.before, p.after, shape.pod !== undefined, outcomes.rename);
      const group = this.#group(causes[k], severity);
      group.count += p.count;
      if (group.examples.length < examplesPerGroup) wanting.push(k);
    });
    if (wanting.length === 0) return;
    const firsts = firstClients(outcomes, this.#clients.length);
    wanting.sort((a, b) => at(firsts, a) - at(firsts, b));
    for (const k of wanting) {
      const group = this.#groups.get(at(causes, k));
      if (!group || group.examples.length >= examplesPerGroup) continue;
      const first = at(firsts, k);
      const request = { from: at(this.#clients, first), ...shape };
      const taken = outcomes.rename !== undefined;
      group.examples.push(this.#example(request, [unit, first], taken, group.cause));
    }
  }

  groups(): EquivalencePart['groups'] {
    return [...this.#groups.values()];
  }

  #group(cause: string, severity: ChangeSeverity): EquivalencePart['groups'][number] {
    let group = this.#groups.get(cause);
    if (!group) {
      group = { severity, cause, count: 0, examples: [] };
      this.#groups.set(cause, group);
    }
    return group;
  }

  /**
   * An example: the request traced for its own client (a class's outcome came from another member's
   * trace). One whose outcomes were `taken` from a request alike up to renaming must come out as they
   * said, or the symmetry is wrong.
   */
  #example(
    request: MatrixRequest,
    order: readonly [number, number],
    taken: boolean,
    cause: string,
  ): OrderedExample {
    const [before, after] = [outcomeOf(this.#meshes[0], request), outcomeOf(this.#meshes[1], request)];
    const traced = causeOf(before, after, request.pod !== undefined);
    if (taken && traced !== cause)
      throw new Error(
        `internal error: ${requestKey(request)} was said to go "${cause}" by the namespaces alike, and is traced "${traced}" (verify --no-symmetry avoids this)`,
      );
    return { order, request, before, after };
  }
}

/** A change's cause, in words (of outcomes renamed by `rename`, when given). */
function causeOf(
  was: RequestOutcome,
  now: RequestOutcome,
  pod: boolean,
  rename?: (text: string) => string,
): string {
  return `${describeOutcome(was, rename)} → ${describeOutcome(now, rename)}${pod ? ' (addressed to the pod)' : ''}`;
}

function requestKey(r: MatrixRequest): string {
  return `${r.method} ${r.url} from ${r.from}`;
}

/** The first client (by index) of each pair of a shape's outcomes. */
function firstClients(outcomes: UnitOutcomes, clients: number): Int32Array {
  const firsts = Int32Array.from(outcomes.pairs, (p) => p.first);
  if (!outcomes.rename) return firsts;
  firsts.fill(-1);
  for (let c = 0; c < clients; c++) {
    const k = outcomes.pairOf(c);
    if (firsts[k] === -1) firsts[k] = c;
  }
  return firsts;
}
