/**
 * Tick-coalesced batching against real masters: same semantics as one call per operation, fewer
 * script calls. Own five masters (one test pauses a master), tapped with MONITOR where the number
 * of script calls is the point.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, type Lock, type Redlock } from '../../src/index.js';
import { QUEUE_SUFFIX, allScripts } from '../../src/script/codec.js';
import type { RedisMaster } from '../../src/testing/redis-server.js';
import {
  eventually,
  monitor,
  redlockOn,
  uniquePrefix,
  useOwnMasters,
  valuesOn,
  type DirectClient,
} from '../harness/cluster.js';

const own = useOwnMasters(5);
let masters: RedisMaster[];
let ports: number[];
let direct: DirectClient[];
beforeAll(() => ({ masters, ports, direct } = own));

async function warmRedlock(settings: Parameters<typeof redlockOn>[1] = {}): Promise<Redlock> {
  const redlock = own.lockOn(settings);
  await (await redlock.acquire(uniquePrefix('warm')('r'), 1_000)).release();
  return redlock;
}

/**
 * Script calls a master received (the batch script or a lean one) that touch keys with this prefix,
 * and the operations in each (lock keys, not their queues).
 */
const callsFor = (lines: string[], prefix: string): number[] =>
  lines
    .filter((line) => allScripts.some(({ sha }) => line.includes(sha)) && line.includes(prefix))
    .map((line) => line.split(`"${prefix}`).length - line.split(`${QUEUE_SUFFIX}"`).length);

describe('batching', () => {
  it('operations issued in one tick reach each master as one script call (after the first of the turn, sent at once)', async () => {
    const redlock = await warmRedlock();
    const key = uniquePrefix('onecall');
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    const locks = await Promise.all(Array.from({ length: 20 }, (_, i) => redlock.acquire(key(`r${i}`), 5_000)));
    await eventually(() => taps.every((tap) => callsFor(tap.lines, key('')).reduce((a, b) => a + b, 0) === 20));
    for (const tap of taps) {
      tap.stop();
      // The first acquire of the turn left at once, the other 19 together at its end.
      expect(callsFor(tap.lines, key(''))).toEqual([1, 19]);
    }
    expect(new Set(locks.map((lock) => lock.value)).size).toBe(20);
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('with batching off every operation is its own script call', async () => {
    const redlock = await warmRedlock({ batching: false });
    const key = uniquePrefix('unbatched');
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    const locks = await Promise.all(Array.from({ length: 10 }, (_, i) => redlock.acquire(key(`r${i}`), 5_000)));
    await eventually(() => taps.every((tap) => callsFor(tap.lines, key('')).length === 10));
    for (const tap of taps) tap.stop();
    for (const tap of taps) expect(callsFor(tap.lines, key(''))).toEqual(Array(10).fill(1));
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('mixed successes and refusals in one batch: each lock gets its own answer', async () => {
    const redlock = await warmRedlock();
    const key = uniquePrefix('mixed');
    const held = [0, 2, 4, 6, 8].map((i) => key(`r${i}`));
    await Promise.all(direct.flatMap((client) => held.map((k) => client.set(k, 'other', { PX: 10_000 }))));
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => redlock.acquire(key(`r${i}`), 5_000, { retryCount: 0 })),
    );
    results.forEach((result, i) => {
      if (i % 2 === 0) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(ExecutionError);
      } else {
        expect(result.status).toBe('fulfilled');
      }
    });
    for (const k of held) expect(await valuesOn(direct, k)).toEqual(Array(5).fill('other'));
    const locks = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    for (const lock of locks) {
      await eventually(async () => (await valuesOn(direct, lock.resources[0]!)).every((v) => v === lock.value));
    }
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('multi-resource locks in one batch are all-or-nothing each, in call order', async () => {
    const redlock = await warmRedlock();
    const key = uniquePrefix('multi');
    const [a, b, c] = await Promise.allSettled([
      redlock.acquire([key('k1'), key('k2')], 5_000, { retryCount: 0 }),
      redlock.acquire([key('k2'), key('k3')], 5_000, { retryCount: 0 }), // conflicts with the first on k2
      redlock.acquire([key('k4'), key('k5')], 5_000, { retryCount: 0 }),
    ]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    expect(c.status).toBe('fulfilled');
    const first = (a as PromiseFulfilledResult<Lock>).value;
    const third = (c as PromiseFulfilledResult<Lock>).value;
    await eventually(async () => (await valuesOn(direct, key('k2'))).every((v) => v === first.value));
    expect(await valuesOn(direct, key('k3'))).toEqual(Array(5).fill(null)); // the refused lock wrote nothing
    await eventually(async () => (await valuesOn(direct, key('k5'))).every((v) => v === third.value));
    await Promise.all([first.release(), third.release()]);
  });

  it('a batch where one master times out: every lock still returns at quorum, and the master ends clean', async () => {
    const redlock = await warmRedlock({ nodeTimeout: 900 });
    const key = uniquePrefix('timeout');
    masters[0]!.pause();
    const start = performance.now();
    const locks = await Promise.all(Array.from({ length: 10 }, (_, i) => redlock.acquire(key(`r${i}`), 5_000)));
    expect(performance.now() - start).toBeLessThan(600); // not the paused master's 900 ms timeout
    for (const lock of locks) expect(lock.expiration).toBeGreaterThan(Date.now() + 4_000);
    const released = await Promise.all(locks.map((lock) => lock.release()));
    expect(released.every((result) => result.released)).toBe(true);
    masters[0]!.resume();
    await eventually(async () => (await direct[0]!.keys(key('*'))).length === 0);
  });

  it('acquire then release in the same tick keep their order on every master', async () => {
    const redlock = await warmRedlock();
    const key = uniquePrefix('order');
    // Release first, then acquire, same tick: the acquire sees the key free.
    const held = await redlock.acquire(key('r'), 5_000);
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === held.value));
    const released = held.release();
    const next = redlock.acquire(key('r'), 5_000, { retryCount: 0 });
    await expect(released).resolves.toMatchObject({ released: true });
    const nextLock = await next;
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === nextLock.value));
    // Acquire first, then release, same tick: the acquire is refused, the holder's key goes.
    const refused = redlock.acquire(key('r'), 5_000, { retryCount: 0 });
    const releasedAfter = nextLock.release();
    await expect(refused).rejects.toBeInstanceOf(ExecutionError);
    await releasedAfter;
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
  });
});
