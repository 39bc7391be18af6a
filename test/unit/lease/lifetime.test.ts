import { describe, expect, it } from 'vitest';
import { LockLostError } from '../../../src/errors.js';
import { Lifetime, RenewalScheduler, type Leased } from '../../../src/lease/lifetime.js';
import type { Lock } from '../../../src/lease/lock.js';

/** What a Lifetime reads of its lock, and what it tells it. */
function fakeLock(): { lock: Lock; lost: LockLostError[]; ended: () => boolean } {
  let ended = false;
  const lost: LockLostError[] = [];
  const lock = {
    resources: ['r'],
    expiration: Date.now() + 60_000,
    endValidity: () => void (ended = true),
    reportLoss: (error: LockLostError) => void lost.push(error),
  } satisfies Leased as unknown as Lock;
  return { lock, lost, ended: () => ended };
}

describe('Lifetime signal (made when first read)', () => {
  it('a loss before the signal was read hands out a signal born aborted with the loss, readable as error', () => {
    const { lock, lost, ended } = fakeLock();
    const lifetime = new Lifetime(lock, undefined);
    lifetime.abandon('the Redlock was quit');
    expect(ended()).toBe(true);
    expect(lost).toHaveLength(1);
    const { signal } = lifetime;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(lost[0]);
    expect(signal.error).toBe(lost[0]);
  });

  it('a signal read before the loss aborts at the loss, once, and is the same signal on every read', () => {
    const { lock, lost } = fakeLock();
    const lifetime = new Lifetime(lock, undefined);
    const { signal } = lifetime;
    expect(signal.aborted).toBe(false);
    expect(signal.error).toBeUndefined();
    let heard = 0;
    signal.addEventListener('abort', () => heard++);
    lifetime.abandon('the Redlock was quit');
    lifetime.abandon('again'); // stopped: a second loss changes nothing
    expect(heard).toBe(1);
    expect(lifetime.signal).toBe(signal);
    expect(signal.error).toBe(lost[0]);
    expect(signal).toBeInstanceOf(AbortSignal);
  });
});

describe('RenewalScheduler', () => {
  it('rounds a renewal down to its 50 ms slot, but keeps the time of one due within a slot (a short lock would otherwise extend back to back)', () => {
    const scheduler = new RenewalScheduler(50);
    const lifetime = new Lifetime(fakeLock().lock, undefined);
    const now = Date.now();
    const far = now + 10_017;
    const farSlot = scheduler.add(lifetime, far);
    expect(farSlot).toBe(Math.floor(far / 50) * 50);
    scheduler.remove(lifetime, farSlot);
    const near = now + 19.6;
    const nearSlot = scheduler.add(lifetime, near);
    expect(nearSlot).toBe(Math.floor(near));
    expect(nearSlot).toBeGreaterThan(now + 10);
    scheduler.remove(lifetime, nearSlot);
    expect(scheduler.scheduled).toEqual([]);
  });
});
