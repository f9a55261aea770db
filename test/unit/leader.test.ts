/** Leader election's decision, as a pure function of the Lease and the clock. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decide, microTime } from '../../src/controller/leader.ts';

const t0 = Date.parse('2026-12-02T10:00:00Z');

describe('leader election: what a replica does with the Lease', () => {
  test('no Lease yet: acquire it, the first transition', () => {
    const d = decide(undefined, 'a', t0);
    assert.equal(d.action, 'acquire');
    assert.deepEqual(d.spec, {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-12-02T10:00:00.000000Z',
      renewTime: '2026-12-02T10:00:00.000000Z',
      leaseTransitions: 0,
    });
  });

  test('its own Lease: renew it, keeping when it was acquired', () => {
    const held = decide(undefined, 'a', t0).spec;
    const d = decide(held, 'a', t0 + 2000);
    assert.equal(d.action, 'renew');
    assert.equal(d.spec.acquireTime, held.acquireTime);
    assert.equal(d.spec.renewTime, microTime(t0 + 2000));
  });

  test("another's fresh Lease: wait; expired (older than its duration): take it over", () => {
    const held = decide(undefined, 'a', t0).spec;
    assert.equal(decide(held, 'b', t0 + 14_000).action, 'wait');
    const d = decide(held, 'b', t0 + 15_001);
    assert.equal(d.action, 'acquire');
    assert.equal(d.spec.holderIdentity, 'b');
    assert.equal(d.spec.leaseTransitions, 1);
  });

  test('a released Lease (no holder): take it at once', () => {
    const released = { ...decide(undefined, 'a', t0).spec, holderIdentity: '' };
    assert.equal(decide(released, 'b', t0 + 100).action, 'acquire');
  });
});
