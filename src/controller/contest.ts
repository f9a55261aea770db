/**
 * Tug-of-war detection. kfmesh restores an object it manages when someone changes it; another controller
 * that writes the same object back (its own form, on every reconcile) would make that a write loop. So
 * restores of one object to the same desired form are counted: after `limit` within `windowMs`, kfmesh
 * stops restoring it, for as long as that form is what it wants, and says who changes it.
 */
import type { KubeObject } from '../model/object.ts';

/** Restores of one object within the window after which kfmesh stops (the window is a minute). */
export const ContestLimit = 3;
const ContestWindowMs = 60_000;

interface Restores {
  /** The desired form restored (its JSON): a new form starts a new count. */
  form: string;
  times: number[];
  given: boolean;
}

export class ContestTracker {
  readonly #restores = new Map<string, Restores>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(limit = ContestLimit, windowMs = ContestWindowMs) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /**
   * Whether kfmesh gives up restoring `id` to `desired` (someone keeps changing it back); otherwise the
   * restore about to happen is counted.
   */
  givenUp(id: string, desired: KubeObject, now: number): boolean {
    const form = JSON.stringify(desired);
    const previous = this.#restores.get(id);
    const entry: Restores = previous && previous.form === form ? previous : { form, times: [], given: false };
    this.#restores.set(id, entry);
    if (entry.given) return true;
    entry.times = [...entry.times.filter((t) => now - t < this.#windowMs), now];
    if (entry.times.length > this.#limit) entry.given = true;
    return entry.given;
  }

  /**
   * The object holds what kfmesh wants. Restores still count for the window (in a tug of war the object
   * holds kfmesh's form between kfmesh's write and the other writer's); one given up is taken up again,
   * since the other writer has stopped.
   */
  settled(id: string, now: number): void {
    const entry = this.#restores.get(id);
    if (!entry) return;
    if (entry.given || entry.times.every((t) => now - t >= this.#windowMs)) this.#restores.delete(id);
  }
}

/** One entry of `metadata.managedFields`: who wrote, how, and when. */
interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
}

/** The field manager that last updated a live object, other than `own` (from its managedFields). */
export function lastOtherManager(live: KubeObject, own: string): string | undefined {
  const fields = live.metadata['managedFields'];
  const entries = (Array.isArray(fields) ? (fields as ManagedFieldsEntry[]) : [])
    .filter((f) => f.manager !== own && f.operation === 'Update')
    .sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  return entries.at(-1)?.manager;
}
