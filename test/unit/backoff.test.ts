/** The controller's retry delays: exponential, capped, with jitter. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffMs } from '../../src/controller/queue.ts';

test('backoff doubles from 1 s to a 30 s cap, within ±20% jitter', () => {
  const low = (n: number) => backoffMs(n, 1000, 30_000, () => 0);
  const high = (n: number) => backoffMs(n, 1000, 30_000, () => 1);
  const mid = (n: number) => backoffMs(n, 1000, 30_000, () => 0.5);
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 20].map(mid), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  assert.equal(low(0), 800);
  assert.equal(high(0), 1200);
  assert.equal(high(50), 36_000);
  // Jitter spreads replicas that failed together.
  const spread = new Set(Array.from({ length: 50 }, () => backoffMs(3)));
  assert.ok(spread.size > 10);
  for (const d of spread) assert.ok(d >= 6400 && d <= 9600);
});
