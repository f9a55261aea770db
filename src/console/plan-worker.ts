/**
 * The migration plan computed off the console's request path: a worker thread plans the snapshot it is
 * given, simulates every state as `kfmesh migrate --plan` does, and says what it is doing as it goes
 * (`plan-job.ts` is the console's side). Once the plan is done it draws the graph of any state asked for.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Snapshot } from '../load/snapshot.ts';
import { messageOf } from '../model/errors.ts';
import type { KubeObject } from '../model/object.ts';
import { planMigration } from '../plan/order.ts';
import { checkPlan } from '../plan/simulate.ts';
import type { MigrationPlan } from '../plan/plan.ts';
import { planGraph, planRequests, planView, stateGraph, stepView } from './plan-view.ts';
import type { MeshGraph, PlanGraph, PlanStepView, PlanView } from './wire.ts';

/** What the worker is given: the snapshot's objects and the cluster's DNS domain. */
export interface PlanWorkerData {
  objects: KubeObject[];
  source: string;
  clusterDomain?: string;
}

/** What the worker says, in order: progress, the steps once ordered, each state once simulated, the end. */
export type PlanWorkerMessage =
  | { type: 'doing'; doing: string }
  | { type: 'ordered'; steps: PlanStepView[] }
  | { type: 'simulated'; step: PlanStepView }
  | { type: 'done'; view: PlanView }
  | { type: 'failed'; error: string }
  | { type: 'graph'; id: number; graph?: PlanGraph; error?: string };

/** What the worker is asked once the plan is done: the graph of the state after a step. */
export interface PlanGraphRequest {
  type: 'graph';
  id: number;
  step: number;
}

function run(port: NonNullable<typeof parentPort>, data: PlanWorkerData): void {
  const say = (message: PlanWorkerMessage) => port.postMessage(message);
  let plan: MigrationPlan;
  try {
    const domain = data.clusterDomain ? { clusterDomain: data.clusterDomain } : {};
    say({ type: 'doing', doing: 'choosing the order of the namespaces (each traced alone)' });
    plan = planMigration(Snapshot.of(data.objects, data.source), {
      ...domain,
      onProgress: (m) => say({ type: 'doing', doing: `tracing ${m}` }),
    });
    const steps = plan.steps;
    say({ type: 'ordered', steps: steps.map((s) => stepView(s, undefined)) });
    const check = checkPlan(plan, {
      ...domain,
      onProgress: (step, total) =>
        say({ type: 'doing', doing: `simulating the state after step ${step} of ${total}` }),
      onState: (state) => {
        const step = steps[state.step - 1];
        if (step) say({ type: 'simulated', step: stepView(step, state) });
      },
    });
    say({ type: 'done', view: planView(plan, check) });
  } catch (error) {
    say({ type: 'failed', error: messageOf(error) });
    return;
  }
  const graphs = new Map<number, MeshGraph>();
  let sample: ReturnType<typeof planRequests> | undefined;
  port.on('message', (request: PlanGraphRequest) => {
    try {
      if (request.step >= plan.states.length) throw new Error(`the plan has no state ${request.step}`);
      sample ??= planRequests(plan);
      const requests = sample.requests;
      const graphOf = (k: number) => {
        let graph = graphs.get(k);
        if (!graph) graphs.set(k, (graph = stateGraph(plan, k, requests)));
        return graph;
      };
      say({ type: 'graph', id: request.id, graph: planGraph(request.step, sample, graphOf) });
    } catch (error) {
      say({ type: 'graph', id: request.id, error: messageOf(error) });
    }
  });
}

const given: PlanWorkerData = workerData;
if (parentPort) run(parentPort, given);
