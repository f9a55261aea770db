/**
 * A speed-up of the equivalence check: how many clients fall in each (before, after) pair of client
 * classes, counted once per pair of partitions. Held to the definition by the tests that trace every
 * client (`--exhaustive`) and compare.
 */
import { at } from '../model/checked.ts';
import type { ClientClasses } from './client-classes.ts';

/**
 * How many clients fall in each (before, after) pair of classes, and the first of them, by the pair of
 * partitions: computed once per pair of partitions, which recur from request to request.
 */
export class ClassPairs {
  readonly #classes: readonly [ClientClasses, ClientClasses];
  readonly #clients: number;
  readonly #known = new Map<string, { counts: Int32Array; first: Int32Array; width: number }>();

  constructor(classes: readonly [ClientClasses, ClientClasses], clients: number) {
    this.#classes = classes;
    this.#clients = clients;
  }

  /** For partitions with `height` classes before and `width` after: the count and first client of each pair. */
  of(before: string, after: string, width: number, height: number) {
    const key = `${before}|${after}`;
    const known = this.#known.get(key);
    if (known) return known;
    const [b, a] = [this.#classes[0].membership(before), this.#classes[1].membership(after)];
    const counts = new Int32Array(height * width);
    const first = new Int32Array(counts.length).fill(-1);
    for (let c = 0; c < this.#clients; c++) {
      const pair = at(b, c) * width + at(a, c);
      if (counts[pair] === 0) first[pair] = c;
      counts[pair] = at(counts, pair) + 1;
    }
    const out = { counts, first, width };
    this.#known.set(key, out);
    return out;
  }
}
