/**
 * Delays above Node's setTimeout limit (2³¹−1 ms, ~24.8 days) behave as written: timers are
 * chained, never clamped to 1 ms. node-redlock's own tests lock for 9e14 ms.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, type Redlock } from '../../src/index.js';
import { monitor, redlockOn, sleep, uniquePrefix, useSharedMasters, warmUp, type DirectClient } from '../harness/cluster.js';
import { leanScripts } from '../../src/script/codec.js';

const shared = useSharedMasters();
let ports: number[];
let direct: DirectClient[];
let redlock: Redlock;
beforeAll(() => ({ ports, direct, redlock } = shared));

const TIMER_LIMIT_MS = 2 ** 31 - 1;

describe('delays beyond the timer limit', () => {
  it.each([3e9, 9e14])('a lock with ttl %d ms stays valid and quiet, its keys expiring that far ahead', async (ttl) => {
    const key = uniquePrefix('long-ttl')('r');
    const before = Date.now();
    const lock = await redlock.acquire(key, ttl);
    const { signal } = lock; // its expiry timer starts now
    await sleep(100);
    expect(signal.aborted).toBe(false);
    expect(lock.expiration).toBeGreaterThan(before + TIMER_LIMIT_MS);
    for (const client of direct) {
      const expiresAt = await client.pExpireTime(key);
      expect(expiresAt).toBeGreaterThanOrEqual(lock.expiration);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + ttl);
    }
    await lock.release();
  });

  it('using() with ttl 3e9 does not renew until its threshold, however far that is', async () => {
    const key = uniquePrefix('long-using')('r');
    let extensions = 0;
    redlock.on('extended', () => extensions++);
    await redlock.using(key, 3e9, async (signal) => {
      await sleep(300);
      expect(signal.aborted).toBe(false);
    });
    expect(extensions).toBe(0);
  });

  it('retryDelay 3e9 waits: one attempt (and one more when its subscriptions took), not a burst', async () => {
    const key = uniquePrefix('long-retry')('r');
    await Promise.all(direct.map((client) => client.set(key, 'held-forever'))); // no PTTL: retryDelay applies
    const tap = await monitor(ports[0]!);
    const controller = new AbortController();
    const slow = redlockOn(ports, { retryDelay: 3e9, retryJitter: 0, retryCount: 50 });
    await warmUp(slow, direct);
    const pending = slow.acquire(key, 1_000, { signal: controller.signal }).catch((error: unknown) => error);
    await sleep(300);
    controller.abort(new Error('enough'));
    await pending;
    tap.stop();
    const acquires = tap.lines.filter((line) => line.includes(leanScripts.acquire.sha) && line.includes(`"${key}"`));
    // The refused attempt; then, once the waiter's subscriptions took (a release announced before
    // them would have been missed), one more. A delay that overflowed a timer would be a burst.
    expect(acquires.length).toBeGreaterThanOrEqual(1);
    expect(acquires.length).toBeLessThanOrEqual(2);
    await slow.quit();
    await Promise.all(direct.map((client) => client.del(key)));
  });

  it('nodeTimeout 3e9 waits for the masters instead of timing them all out', async () => {
    const key = uniquePrefix('long-timeout')('r');
    const lock = await redlock.acquire(key, 4e9, { nodeTimeout: 3e9, retryCount: 0 }).catch((error: unknown) => error);
    expect(lock).not.toBeInstanceOf(ExecutionError);
    await (lock as { release(): Promise<unknown> }).release();
  });
});
