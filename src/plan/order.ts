/**
 * The order in which namespaces move, chosen by tracing: for each namespace, the state in which it alone
 * has moved (after the platform's first steps) is checked against the start, and every request it breaks
 * that works again once the migration is done is charged to the pair it joins: the namespace that moved
 * and the other one of the request (its client's, else its server's) that has not. Moving X before Y
 * costs what X alone breaks between them.
 *
 * Where X before Y costs and so does Y before X (a sidecar client each way of an L7 policy that moves
 * to a waypoint), no order of the two is safe: they move together, one step per stage for both. Such
 * namespaces form the strongly connected parts of the "costs" graph; between the parts an order that
 * costs nothing exists (the parts form a DAG), and the one taken is alphabetical among the free choices.
 *
 * Pairs are an estimate: three namespaces can interact in ways no pair shows. The plan's own check
 * (simulate.ts) traces every state of the order taken, so what it reports is exact for its requests.
 */
import { got } from '../model/checked.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { checkEquivalence, type MatrixRequest, type RequestOutcome } from '../verify/equivalence.ts';
import { namespaceStages } from './stages.ts';
import {
  planInOrder,
  platformFirst,
  preparePlan,
  stepsOf,
  type MigrationPlan,
  type PlanInput,
  type PlanOptions,
} from './plan.ts';
import type { PlanState } from './state.ts';
import { lostAccess, requestKey } from './simulate.ts';

/** What moving one namespace before another breaks until the other moves. */
export interface OrderCost {
  first: string;
  then: string;
  requests: number;
  example: { request: MatrixRequest; before: RequestOutcome; after: RequestOutcome };
}

/** The order taken (groups of namespaces that move together) and what each pair costs one at a time. */
export interface OrderChoice {
  groups: string[][];
  costs: OrderCost[];
}

export interface ChooseOptions {
  clusterDomain?: string;
  onProgress?: (message: string) => void;
}

/** A plan whose namespaces move in the order `chooseOrder` finds (or the one given). */
export function planMigration(
  snapshot: Snapshot,
  options: PlanOptions & ChooseOptions = {},
): MigrationPlan & { choice: OrderChoice } {
  const input = preparePlan(snapshot, options);
  const choice = options.order
    ? { groups: options.order.map((ns) => [ns]), costs: [] }
    : chooseOrder(input, options);
  return { ...planInOrder(input, choice.groups), choice };
}

/** Chooses the order in which the namespaces of a plan move. */
function chooseOrder(input: PlanInput, options: ChooseOptions = {}): OrderChoice {
  const names = [...input.moving].sort();
  if (names.length < 2) return { groups: names.map((n) => [n]), costs: [] };
  const domain = options.clusterDomain ? { clusterDomain: options.clusterDomain } : {};
  const start = input.start.snapshot();
  const lost = (
    state: PlanState,
    each: (key: string, r: MatrixRequest, was: RequestOutcome, now: RequestOutcome) => void,
  ) =>
    checkEquivalence(start, state.snapshot(), {
      ...domain,
      onChange: (request, was, now) => {
        if (lostAccess(was, now)) each(requestKey(request), request, was, now);
      },
    });
  options.onProgress?.('the end state');
  const endBroken = new Set<string>();
  lost(planInOrder(input, [names]).states.at(-1) as PlanState, (key) => endBroken.add(key));
  const base = stepsOf(input, platformFirst, input.start, false).states.at(-1) as PlanState;
  const moving = new Set(names);
  const costs = new Map<string, OrderCost>();
  for (const x of names) {
    options.onProgress?.(`${x} moved alone`);
    const alone = stepsOf(
      input,
      namespaceStages.map((stage) => ({ stage, namespace: x, namespaces: [x] })),
      base,
      false,
    );
    lost(alone.states.at(-1) as PlanState, (key, request, before, after) => {
      if (endBroken.has(key)) return;
      const client = request.from.split('/')[0] ?? '';
      const server = before.answeredBy?.split('/')[0] ?? '';
      const y =
        client !== x && moving.has(client) ? client : server !== x && moving.has(server) ? server : undefined;
      if (y === undefined) return;
      const pair = `${x}\u0000${y}`;
      const cost = costs.get(pair) ?? { first: x, then: y, requests: 0, example: { request, before, after } };
      cost.requests++;
      costs.set(pair, cost);
    });
  }
  const listed = [...costs.values()].sort(
    (a, b) => b.requests - a.requests || (a.first + a.then < b.first + b.then ? -1 : 1),
  );
  return { groups: groupsInOrder(names, (a, b) => costs.has(`${a}\u0000${b}`)), costs: listed };
}

/**
 * The strongly connected parts of the graph "x before y costs" (Tarjan's algorithm), ordered so that no
 * part comes before one it costs against: a part goes after every part it has an edge to. Among parts
 * free to go next, the alphabetically first.
 */
export function groupsInOrder(
  names: readonly string[],
  costs: (x: string, y: string) => boolean,
): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const parts: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, got(index, v));
    stack.push(v);
    for (const w of names) {
      if (w === v || !costs(v, w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(got(low, v), got(low, w)));
      } else if (stack.includes(w)) low.set(v, Math.min(got(low, v), got(index, w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const part: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) part.push(w);
    parts.push(part.sort());
  };
  for (const v of names) if (!index.has(v)) visit(v);
  const partOf = new Map(parts.flatMap((p, i) => p.map((n) => [n, i] as const)));
  const after = (i: number) =>
    new Set(
      (parts[i] ?? []).flatMap((x) =>
        names.filter((y) => costs(x, y) && partOf.get(y) !== i).map((y) => got(partOf, y)),
      ),
    );
  const placed = new Set<number>();
  const out: string[][] = [];
  while (out.length < parts.length) {
    const free = parts
      .map((p, i) => ({ p, i }))
      .filter(({ i }) => !placed.has(i) && [...after(i)].every((j) => placed.has(j)))
      .sort((a, b) => ((a.p[0] ?? '') < (b.p[0] ?? '') ? -1 : 1));
    const next = free[0];
    if (!next) break;
    placed.add(next.i);
    out.push(next.p);
  }
  return out;
}
