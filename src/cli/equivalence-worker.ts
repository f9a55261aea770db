/**
 * A worker thread of `verify --equivalence --jobs N`: compiles the request matrix of the configurations
 * it is given once, then traces the runs of units the pool sends it, one at a time, sending back each
 * run's piece, until the pool says it is done.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Snapshot } from '../load/snapshot.ts';
import type { KubeObject } from '../model/object.ts';
import { EquivalenceMatrix, type EquivalencePart } from '../verify/equivalence.ts';

/** What the pool gives a worker. */
export interface WorkerInput {
  before: KubeObject[];
  after: KubeObject[];
  clusterDomain: string;
  exhaustive: boolean;
  symmetry: boolean;
}

/** What the pool sends: a run of units to trace (`from` up to but not including `to`), or the end. */
export type PoolMessage = { from: number; to: number } | { done: true };

/** What a worker sends: that it is ready (with the matrix's size), a run's piece, or what stopped it. */
export type WorkerMessage =
  | { ready: { units: number; requests: number } }
  | { piece: Omit<EquivalencePart, 'shard'> }
  | { error: string };

const port = parentPort;
const input = workerData as WorkerInput;
const send = (message: WorkerMessage) => port?.postMessage(message);
try {
  const matrix = new EquivalenceMatrix(Snapshot.of(input.before), Snapshot.of(input.after), {
    clusterDomain: input.clusterDomain,
    exhaustive: input.exhaustive,
    symmetry: input.symmetry,
  });
  port?.on('message', (message: PoolMessage) => {
    if ('done' in message) {
      port.close();
      return;
    }
    try {
      send({ piece: matrix.trace((unit) => unit >= message.from && unit < message.to) });
    } catch (error) {
      send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
  });
  send({ ready: { units: matrix.units, requests: matrix.requests } });
} catch (error) {
  send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
