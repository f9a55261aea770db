/**
 * Every state of a plan checked against the start: the request matrix and the probes of what the
 * controllers create next (verify/), as `kfmesh verify --equivalence START STATE` would; each step's undo
 * checked against the state before the step; and the outage windows: requests that stop working in some
 * state and work again in a later one, with the steps they span.
 */
import { ambientPrerequisites, type Prerequisites } from './prerequisites.ts';
import {
  checkEquivalence,
  describeOutcome,
  type EquivalenceResult,
  type MatrixRequest,
  type RequestOutcome,
} from '../verify/equivalence.ts';
import { checkProbes, type ProbeReport } from '../verify/probes.ts';
import { sameState, type MigrationPlan } from './plan.ts';

/** One state (after a step) against the start, and the step's undo. */
export interface StateCheck {
  step: number;
  result: EquivalenceResult;
  probes: ProbeReport;
  /** The step undone: the same objects and pods as before the step, or else what tracing both shows. */
  undo: { identical: boolean; result?: EquivalenceResult };
}

/** Requests that stop working at step `from` and work again after step `to`, the same way. */
export interface OutageWindow {
  /** `start → during`, in words. */
  cause: string;
  from: number;
  to: number;
  count: number;
  examples: MatrixRequest[];
}

export interface PlanCheck {
  states: StateCheck[];
  windows: OutageWindow[];
  /** Requests denied at the start and answered in some state (and probes opening access), over all states. */
  errors: number;
  /** Flows of the platform (flows/flows.ts) that work at the start and not in some state, over all states. */
  brokenFlows: number;
  /** Steps whose undo does not give back the state before them. */
  badUndos: number[];
  /** What ambient mode needs, as the start shows it; its `blocking` fail the first step. */
  prerequisites: Prerequisites;
}

export interface CheckPlanOptions {
  clusterDomain?: string;
  /** Called before each state is checked. */
  onProgress?: (step: number, total: number) => void;
  /** Called with each state once it is checked. */
  onState?: (state: StateCheck) => void;
}

/** Checks every state of a plan and every step's undo. */
export function checkPlan(plan: MigrationPlan, options: CheckPlanOptions = {}): PlanCheck {
  const domain = options.clusterDomain ? { clusterDomain: options.clusterDomain } : {};
  const start = plan.states[0];
  if (!start) throw new Error('a plan has a start state');
  const windows = new Windows();
  const states: StateCheck[] = [];
  for (const step of plan.steps) {
    options.onProgress?.(step.number, plan.steps.length);
    const [before, after] = [plan.states[step.number - 1], plan.states[step.number]];
    if (!before || !after) throw new Error(`plan step ${step.number} has no state`);
    const broken = new Map<string, { request: MatrixRequest; cause: string }>();
    const result = checkEquivalence(start.snapshot(), after.snapshot(), {
      ...domain,
      onChange: (request, was, now) => {
        if (!lostAccess(was, now)) return;
        broken.set(requestKey(request), {
          request,
          cause: `${describeOutcome(was)} → ${describeOutcome(now)}`,
        });
      },
    });
    windows.state(step.number, broken);
    const probes = checkProbes(start.snapshot(), after.snapshot(), domain);
    const undone = after.apply(step.undo);
    const identical = sameState(undone, before);
    const checked: StateCheck = {
      step: step.number,
      result,
      probes,
      undo: identical
        ? { identical }
        : { identical, result: checkEquivalence(before.snapshot(), undone.snapshot(), domain) },
    };
    states.push(checked);
    options.onState?.(checked);
  }
  const badUndos = states
    .filter((s) => !s.undo.identical && (s.undo.result?.errors ?? 0) + (s.undo.result?.warnings ?? 0) > 0)
    .map((s) => s.step);
  return {
    states,
    windows: windows.closed(),
    errors: states.reduce((n, s) => n + s.result.errors + s.probes.opened, 0),
    brokenFlows: states.reduce((n, s) => n + s.probes.flows.broken, 0),
    badUndos,
    prerequisites: ambientPrerequisites(start.objects.values()),
  };
}

/** Whether a request that was answered is no longer answered, or by another application. */
export function lostAccess(was: RequestOutcome, now: RequestOutcome): boolean {
  return was.verdict === 'allowed' && (now.verdict !== 'allowed' || now.answeredBy !== was.answeredBy);
}

export function requestKey(r: MatrixRequest): string {
  return JSON.stringify([r.from, r.method, r.url, r.pod ?? '', Object.entries(r.headers).sort()]);
}

/** Runs of states in which a request is broken, closed when it works again. */
class Windows {
  readonly #open = new Map<string, { from: number; request: MatrixRequest; cause: string }>();
  readonly #closed = new Map<string, OutageWindow>();

  /** The requests broken in the state after `step`. */
  state(step: number, broken: ReadonlyMap<string, { request: MatrixRequest; cause: string }>): void {
    for (const [key, run] of this.#open)
      if (!broken.has(key)) {
        this.#open.delete(key);
        this.#close(run, step - 1);
      }
    for (const [key, b] of broken) if (!this.#open.has(key)) this.#open.set(key, { from: step, ...b });
  }

  #close(run: { from: number; request: MatrixRequest; cause: string }, to: number): void {
    const key = `${run.from}|${to}|${run.cause}`;
    const w = this.#closed.get(key) ?? { cause: run.cause, from: run.from, to, count: 0, examples: [] };
    w.count++;
    if (w.examples.length < 5) w.examples.push(run.request);
    this.#closed.set(key, w);
  }

  /** The closed windows, longest and largest first. */
  closed(): OutageWindow[] {
    return [...this.#closed.values()].sort(
      (a, b) =>
        b.to - b.from - (a.to - a.from) ||
        b.count - a.count ||
        a.from - b.from ||
        (a.cause < b.cause ? -1 : a.cause > b.cause ? 1 : 0),
    );
  }
}
