/**
 * Tug-of-war detection. kfmesh restores an object it manages when someone changes it; another controller
 * that writes the same object back (its own form, on every reconcile) would make that a write loop. So
 * restores of one object to the same desired form are counted: after `limit` within `windowMs`, kfmesh
 * stops restoring it and says who changes it. It takes the object up again once the other writer has
 * been quiet for a pause (1 minute, doubling each time it is given up again, at most 16 minutes): a hand
 * edit or a writer that stopped does not keep kfmesh's form away for good, and a writer that goes on
 * costs one restore per pause.
 */
import type { KubeObject } from '../model/object.ts';

/** Restores of one object within the window after which kfmesh stops (the window is a minute). */
export const ContestLimit = 3;
const ContestWindowMs = 60_000;
/** The first pause after giving up, and the longest in pauses. */
const PauseMs = 60_000;
const MaxPauses = 16;

interface Restores {
  /** The desired form restored (its JSON): a new form starts a new count. */
  form: string;
  times: number[];
  /** While given up: when kfmesh takes the object up again. */
  until?: number;
  /** How many times it was given up in a row (the pause doubles with each). */
  rounds: number;
}

export class ContestTracker {
  readonly #restores = new Map<string, Restores>();
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #pauseMs: number;

  constructor(limit = ContestLimit, windowMs = ContestWindowMs, pauseMs = PauseMs) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#pauseMs = pauseMs;
  }

  /**
   * Whether kfmesh leaves `id` as it is rather than restore it to `desired` now: given up, and the pause
   * not over. Otherwise the restore about to happen is counted, and may give the object up: then
   * `resumesAt` says when to look again.
   */
  givenUp(id: string, desired: KubeObject, now: number): boolean {
    const form = JSON.stringify(desired);
    const previous = this.#restores.get(id);
    const entry: Restores = previous && previous.form === form ? previous : { form, times: [], rounds: 0 };
    this.#restores.set(id, entry);
    if (entry.until !== undefined) {
      if (now < entry.until) return true;
      // The pause is over: one restore, which the other writer may answer again.
      entry.until = undefined;
      entry.times = [now];
      return false;
    }
    entry.times = [...entry.times.filter((t) => now - t < this.#windowMs), now];
    // The first contest allows `limit` restores in the window; one taken up again after a pause, one.
    if (entry.times.length <= (entry.rounds === 0 ? this.#limit : 1)) return false;
    entry.until = now + Math.min(2 ** entry.rounds, MaxPauses) * this.#pauseMs;
    entry.rounds++;
    return true;
  }

  /** When a given-up object is taken up again (undefined when it is not given up). */
  resumesAt(id: string): number | undefined {
    return this.#restores.get(id)?.until;
  }

  /**
   * The object holds what kfmesh wants. Restores still count for the window (in a tug of war the object
   * holds kfmesh's form between kfmesh's write and the other writer's); once the window has passed
   * without a restore, the object's history is forgotten. One given up that holds kfmesh's form again
   * is taken up again at once: the other writer has stopped.
   */
  settled(id: string, now: number): void {
    const entry = this.#restores.get(id);
    if (!entry) return;
    if (entry.until !== undefined || entry.times.every((t) => now - t >= this.#windowMs))
      this.#restores.delete(id);
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
