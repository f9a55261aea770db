/**
 * The console's side of the plan worker (`plan-worker.ts`): starts it when the plan is first asked for,
 * keeps what it has said, and answers from that at once, so the plan, however long it takes, never holds
 * up another request. The worker keeps the process alive only while it is computing or drawing.
 */
import { Worker } from 'node:worker_threads';
import type { KubeObject } from '../model/object.ts';
import type { PlanGraphRequest, PlanWorkerData, PlanWorkerMessage } from './plan-worker.ts';
import type { PlanGraph, PlanProgress, PlanStepView, PlanView } from './wire.ts';

/** Where the plan is: being computed (with its progress), done, or failed (and why). */
export type PlanStatus =
  | { state: 'computing'; progress: PlanProgress }
  | { state: 'done'; view: PlanView }
  | { state: 'failed'; error: string };

export class PlanJob {
  readonly #worker: Worker;
  readonly #started = performance.now();
  #doing = 'starting';
  /** The steps once ordered; each says whether its state is simulated yet. */
  #steps: PlanStepView[] = [];
  #view: PlanView | undefined;
  #error: string | undefined;
  #nextId = 0;
  readonly #waiting = new Map<number, { resolve: (g: PlanGraph) => void; reject: (e: Error) => void }>();
  #closed = false;

  constructor(objects: readonly KubeObject[], source: string, clusterDomain?: string) {
    const data: PlanWorkerData = {
      objects: [...objects],
      source,
      ...(clusterDomain ? { clusterDomain } : {}),
    };
    this.#worker = new Worker(new URL('./plan-worker.js', import.meta.url), { workerData: data });
    this.#worker.on('message', (message: PlanWorkerMessage) => this.#heard(message));
    this.#worker.on('error', (error) => this.#fail(`the plan's worker stopped: ${error.message}`));
    this.#worker.on('exit', (code) => {
      if (!this.#closed) this.#fail(`the plan's worker exited (code ${code})`);
    });
  }

  status(): PlanStatus {
    if (this.#view) return { state: 'done', view: this.#view };
    if (this.#error !== undefined) return { state: 'failed', error: this.#error };
    return {
      state: 'computing',
      progress: {
        doing: this.#doing,
        simulated: this.#steps.filter((s) => s.simulated).length,
        total: this.#steps.length,
        steps: this.#steps,
        seconds: Math.round((performance.now() - this.#started) / 100) / 10,
      },
    };
  }

  /** The graph of the state after `step`, once the plan is done (drawn by the worker, one at a time). */
  graph(step: number): Promise<PlanGraph> {
    if (this.#error !== undefined) return Promise.reject(new Error(this.#error));
    const id = this.#nextId++;
    const request: PlanGraphRequest = { type: 'graph', id, step };
    this.#worker.ref();
    this.#worker.postMessage(request);
    return new Promise((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
  }

  /** Stops the worker (the console was reloaded or is closing); what waits for it fails. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#fail('the console was reloaded or closed');
    await this.#worker.terminate();
  }

  #heard(message: PlanWorkerMessage): void {
    switch (message.type) {
      case 'doing':
        this.#doing = message.doing;
        return;
      case 'ordered':
        this.#steps = message.steps;
        return;
      case 'simulated':
        this.#steps = this.#steps.map((s) => (s.number === message.step.number ? message.step : s));
        return;
      case 'done':
        this.#view = message.view;
        this.#idle();
        return;
      case 'failed':
        this.#fail(message.error);
        return;
      case 'graph': {
        const waiting = this.#waiting.get(message.id);
        this.#waiting.delete(message.id);
        if (message.graph) waiting?.resolve(message.graph);
        else waiting?.reject(new Error(message.error ?? 'no graph'));
        this.#idle();
      }
    }
  }

  #fail(error: string): void {
    this.#error ??= error;
    for (const { reject } of this.#waiting.values()) reject(new Error(error));
    this.#waiting.clear();
    this.#idle();
  }

  /** Lets the process exit while the worker waits for nothing. */
  #idle(): void {
    if (this.#waiting.size === 0) this.#worker.unref();
  }
}
