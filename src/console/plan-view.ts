/**
 * The migration plan as the console shows it: its steps with what each state gave against the start, the
 * outage windows, and for each state the graph of its traffic with the edges the step changed. The same
 * plan and checks as `kfmesh migrate --plan` (plan/), drawn from the graph's request sample.
 */
import type { MigrationPlan } from '../plan/plan.ts';
import type { PlanCheck, StateCheck } from '../plan/simulate.ts';
import type { PlanStep } from '../plan/plan.ts';
import { operationText, requestText, stageTitles } from '../plan/plan-files.ts';
import { requestShapes, type MatrixRequest } from '../verify/equivalence.ts';
import { DefaultGraphBudget, meshGraph, sampleMatrix } from './graph.ts';
import type { GraphEdge, MeshGraph, PlanGraph, PlanStepView, PlanView } from './wire.ts';

/** The plan's steps and windows, as the page lists them. */
export function planView(plan: MigrationPlan, check: PlanCheck): PlanView {
  return {
    groups: plan.groups,
    errors: check.errors,
    steps: plan.steps.map((step) => stepView(step, check.states[step.number - 1])),
    windows: check.windows.map((w) => ({
      from: w.from,
      to: w.to,
      count: w.count,
      cause: w.cause,
      example: w.examples[0] ? requestText(w.examples[0]) : '',
    })),
  };
}

/** One step as the page lists it, with what its state gave once it is simulated. */
export function stepView(step: PlanStep, state: StateCheck | undefined): PlanStepView {
  return {
    number: step.number,
    id: step.id,
    stage: step.stage,
    title: stageTitles[step.stage],
    namespaces: step.namespaces,
    changes: step.operations.map(operationText),
    simulated: state !== undefined,
    errors: state?.result.errors ?? 0,
    warnings: state?.result.warnings ?? 0,
    notes: state?.result.notes ?? 0,
    differences: (state?.result.groups ?? []).map((g) => ({
      severity: g.severity,
      cause: g.cause,
      count: g.count,
      example: g.examples[0] ? requestText(g.examples[0].request) : '',
    })),
  };
}

/** The requests every state's graph is drawn from: the matrix of the start and the end, sampled as the mode graphs are. */
export function planRequests(
  plan: MigrationPlan,
  budget = DefaultGraphBudget,
): { requests: MatrixRequest[]; matrix: number } {
  const [start, end] = [plan.states[0], plan.states.at(-1)];
  if (!start || !end) return { requests: [], matrix: 0 };
  const { clients, shapes, external } = requestShapes(start.mesh(), end.mesh());
  return {
    requests: sampleMatrix(clients, shapes, external, budget),
    matrix: clients.length * shapes.length + external.length,
  };
}

/** The graph of the state after `step`, with the edges whose traffic differs from the state before. */
export function planGraph(
  step: number,
  sample: { requests: readonly MatrixRequest[]; matrix: number },
  graphOf: (step: number) => MeshGraph,
): PlanGraph {
  const graph = graphOf(step);
  const before = step > 0 ? graphOf(step - 1) : graph;
  const key = (e: GraphEdge) => `${e.source} ${e.target}`;
  const counts = (e: GraphEdge | undefined) =>
    e ? [e.requests, e.allowed, e.denied, e.failed, e.passthrough, e.blackhole, e.mtls].join(',') : '';
  const was = new Map(before.edges.map((e) => [key(e), e]));
  const changed = graph.edges.filter((e) => counts(e) !== counts(was.get(key(e)))).map(key);
  return {
    step,
    graph,
    requests: sample.requests.length,
    matrix: sample.matrix,
    changed,
  };
}

/** A state's graph (`step` 0 is the start). */
export function stateGraph(plan: MigrationPlan, step: number, requests: readonly MatrixRequest[]): MeshGraph {
  const state = plan.states[step];
  if (!state) throw new Error(`the plan has no state ${step}`);
  return meshGraph(state.mesh(), requests);
}
