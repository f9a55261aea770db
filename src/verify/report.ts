/**
 * What the equivalence check reports, and how reports of pieces of the matrix (slices on other
 * machines, runs of worker threads) add up to the report of the whole: the definition of the result,
 * apart from how `equivalence.ts` makes it fast.
 */
import type { ChangeSeverity, MatrixRequest, RequestOutcome } from './requests.ts';

/** Requests whose outcome changed the same way. */
export interface ChangeGroup {
  severity: ChangeSeverity;
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
  groups: { severity: ChangeSeverity; cause: string; count: number; examples: OrderedExample[] }[];
}

/** How many examples each group of the report keeps: the first in the matrix's order. */
export const examplesPerGroup = 5;

/**
 * The report of the whole matrix from its slices: one part per slice of one count, each once (throws
 * otherwise). Counts add up; each group keeps the matrix's first five examples.
 */
export function mergeEquivalence(parts: readonly EquivalencePart[]): EquivalenceResult {
  const problem = slicesProblem(
    parts.map((p) => ({ name: `${p.shard.index}/${p.shard.count}`, shard: p.shard })),
  );
  if (problem) throw new Error(problem);
  return combinePieces(parts);
}

/**
 * What keeps slices, each named for messages, from being the slices 0 to n-1 of n, each once: a count that
 * differs, a slice outside the range or given twice, slices missing; undefined when there is nothing.
 */
export function slicesProblem(
  slices: readonly { name: string; shard: { index: number; count: number } }[],
): string | undefined {
  const first = slices[0];
  if (!first) return 'no slices';
  const count = first.shard.count;
  const seen = new Map<number, string>();
  for (const { name, shard } of slices) {
    if (shard.count !== count)
      return `${name} is slice ${shard.index}/${shard.count}, ${first.name} one of ${count}`;
    if (!Number.isInteger(shard.index) || shard.index < 0 || shard.index >= count)
      return `${name} is slice ${shard.index}, outside 0 to ${count - 1}`;
    const twice = seen.get(shard.index);
    if (twice) return `${name} and ${twice} are both slice ${shard.index}/${count}`;
    seen.set(shard.index, name);
  }
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  return missing.length > 0
    ? `missing slice(s) ${missing.map((i) => `${i}/${count}`).join(', ')}`
    : undefined;
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
  const count = (s: ChangeSeverity) =>
    sorted.filter((g) => g.severity === s).reduce((n, g) => n + g.count, 0);
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
