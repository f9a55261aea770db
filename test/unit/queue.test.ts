/**
 * The controller's work queue: a key at most once, never handed out twice at the same time, a change during
 * work queues the key again afterwards, retries back off per key and share one token bucket, and added keys
 * are not rate-limited.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkQueue } from '../../src/controller/queue.ts';

/** A queue on a clock the test moves; timers fire when the clock passes them. */
function fakeQueue(options: { baseDelayMs?: number; qps?: number; burst?: number } = {}) {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const queue = new WorkQueue({
    ...options,
    now: () => now,
    setTimer: (fn, ms) => timers.push({ at: now + ms, fn }),
  });
  const advance = (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => x.at <= now)) {
      timers.splice(timers.indexOf(t), 1);
      t.fn();
    }
  };
  return { queue, advance };
}

describe('WorkQueue', () => {
  test('a key is queued once however often it is added', async () => {
    const { queue } = fakeQueue();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    assert.equal(queue.depth, 2);
    assert.equal(await queue.next(), 'a');
    assert.equal(await queue.next(), 'b');
    assert.equal(queue.depth, 0);
  });

  test('a key being worked on is not handed out again; a change meanwhile queues it after', async () => {
    const { queue } = fakeQueue();
    queue.add('a');
    assert.equal(await queue.next(), 'a');
    queue.add('a');
    assert.equal(queue.depth, 0);
    queue.done('a');
    assert.equal(queue.depth, 1);
    assert.equal(await queue.next(), 'a');
    queue.done('a');
    assert.equal(queue.depth, 0);
  });

  test('a waiting worker gets the next key added', async () => {
    const { queue } = fakeQueue();
    const waiting = queue.next();
    queue.add('x');
    assert.equal(await waiting, 'x');
  });

  test('added keys are handed out at once, beyond any rate', async () => {
    const { queue } = fakeQueue({ qps: 1, burst: 1 });
    for (let i = 0; i < 500; i++) queue.add(`k${i}`);
    for (let i = 0; i < 500; i++) assert.equal(await queue.next(), `k${i}`);
  });

  test('retries back off per key, doubling; forget starts over', () => {
    const { queue } = fakeQueue({ baseDelayMs: 10, qps: 1000, burst: 1000 });
    assert.deepEqual(
      [1, 2, 3, 4].map(() => queue.retry('a')),
      [10, 20, 40, 80],
    );
    assert.equal(queue.retry('b'), 10);
    queue.forget('a');
    assert.equal(queue.retry('a'), 10);
  });

  test('retries share a token bucket: past the burst they wait for tokens', () => {
    const { queue, advance } = fakeQueue({ baseDelayMs: 1, qps: 10, burst: 3 });
    const delays = ['a', 'b', 'c', 'd', 'e'].map((k) => queue.retry(k));
    assert.deepEqual(delays, [1, 1, 1, 100, 200]);
    advance(150);
    assert.equal(queue.depth, 4);
    advance(100);
    assert.equal(queue.depth, 5);
  });

  test('close: waiting and later callers get undefined; adds are ignored', async () => {
    const { queue } = fakeQueue();
    const waiting = queue.next();
    queue.close();
    assert.equal(await waiting, undefined);
    queue.add('a');
    assert.equal(await queue.next(), undefined);
  });
});
