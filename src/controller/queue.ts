/**
 * A work queue as controllers use them: a key is queued at most once, a key being worked on is not
 * handed out twice (a change meanwhile queues it again for after), and a failed key comes back after the
 * longer of its own exponential backoff and the wait of an overall token bucket shared by all retries (so a
 * storm of failures can't flood the API server). Keys added because something changed are handed out at
 * once: only retries are rate-limited. The clock and the timers are injected, so tests can drive it.
 */
export interface QueueOptions {
  /** First retry delay and its cap, in ms (client-go: 5 ms and 1000 s). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Token bucket of retries: retries per second and burst (client-go: 10 and 100). */
  qps?: number;
  burst?: number;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
}

export class WorkQueue {
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #waiters: ((key: string | undefined) => void)[] = [];
  readonly #options: Required<QueueOptions>;
  #tokens: number;
  #refilledAt: number;
  #closed = false;

  constructor(options: QueueOptions = {}) {
    this.#options = {
      baseDelayMs: options.baseDelayMs ?? 5,
      maxDelayMs: options.maxDelayMs ?? 1_000_000,
      qps: options.qps ?? 10,
      burst: options.burst ?? 100,
      now: options.now ?? Date.now,
      setTimer: options.setTimer ?? ((fn, ms) => setTimeout(fn, ms).unref()),
    };
    this.#tokens = this.#options.burst;
    this.#refilledAt = this.#options.now();
  }

  /** Keys waiting (not counting those being worked on). */
  get depth(): number {
    return this.#queue.length;
  }

  /** No key waiting and none being worked on (retries may be pending). */
  get idle(): boolean {
    return this.#queue.length === 0 && this.#active.size === 0;
  }

  /** Keys whose last try failed (waiting for their retry). */
  get failing(): number {
    return this.#failures.size;
  }

  /** Queues a key (once). A key being worked on is queued again when its work is done. */
  add(key: string): void {
    if (this.#closed) return;
    if (this.#active.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    const waiter = this.#waiters.shift();
    if (waiter) {
      this.#queued.delete(key);
      this.#active.add(key);
      waiter(key);
    } else this.#queue.push(key);
  }

  /**
   * Queues a key again after its backoff (which doubles with each failure in a row), or later when the
   * retries' token bucket is empty. Returns the delay in ms.
   */
  retry(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const backoff = Math.min(this.#options.baseDelayMs * 2 ** (failures - 1), this.#options.maxDelayMs);
    const delay = Math.max(backoff, this.#reserveToken());
    this.#options.setTimer(() => this.add(key), delay);
    return delay;
  }

  /** Forgets a key's failures (after it succeeded). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** The next key, once one is queued; undefined once the queue is closed. */
  async next(): Promise<string | undefined> {
    if (this.#closed) return undefined;
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#queued.delete(key);
      this.#active.add(key);
      return key;
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks a key's work done; queues it again if it changed meanwhile. */
  done(key: string): void {
    this.#active.delete(key);
    if (this.#dirty.delete(key)) this.add(key);
  }

  /** Stops handing out keys; waiting callers get undefined. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w(undefined);
  }

  /** Takes a token from the retries' bucket; returns how long until it is there (0 when it is now). */
  #reserveToken(): number {
    const now = this.#options.now();
    const { qps, burst } = this.#options;
    this.#tokens = Math.min(burst, this.#tokens + ((now - this.#refilledAt) / 1000) * qps);
    this.#refilledAt = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / qps) * 1000);
  }
}

/** Exponential backoff with jitter: `base` doubled per attempt up to `cap`, then ±20%. */
export function backoffMs(attempt: number, base = 1000, cap = 30_000, random = Math.random): number {
  const delay = Math.min(cap, base * 2 ** Math.max(0, attempt));
  return Math.round(delay * (0.8 + 0.4 * random()));
}
