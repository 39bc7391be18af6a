/**
 * Reentrancy: inside a using() routine, nested using()/acquire() of resources it holds re-enter
 * without a network call; other async contexts still exclude each other. Shared masters, unique keys.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, ReentrancyError, type Redlock } from '../../src/index.js';
import { leanScripts, lockScript } from '../../src/script/codec.js';
import { eventually, monitor, sleep, uniquePrefix, useSharedMasters, valuesOn, type DirectClient } from '../harness/cluster.js';

const shared = useSharedMasters();
let ports: number[];
let direct: DirectClient[];
let redlock: Redlock;
beforeAll(() => ({ ports, direct, redlock } = shared));

/** Acquires of `key` a master received: its lean script's, or the batch script's operation "a". */
const acquiresOf = (lines: string[], key: string): number =>
  lines.filter(
    (line) => line.includes(`"${key}"`) && (line.includes(leanScripts.acquire.sha) || (line.includes(lockScript.sha) && line.includes('"a"'))),
  ).length;

describe('reentrancy', () => {
  it('nested using and acquire of held resources re-enter without a network call; the outer keeps ownership', async () => {
    const key = uniquePrefix('nested');
    const tap = await monitor(ports[0]!);
    await redlock.using([key('a'), key('b')], 5_000, async (_signal, outer) => {
      await redlock.using(key('a'), 5_000, (_inner, lock) => {
        expect(lock.reentered).toBe(true);
        expect(lock.value).toBe(outer.value);
        expect(lock.attempts).toBe(0);
      });
      const inner = await redlock.acquire([key('b'), key('a')], 5_000);
      expect(inner.expiration).toBe(outer.expiration);
      expect(await inner.release()).toEqual({ released: false, confirmedBy: 0, heldBy: 0, outcomes: [] });
      // The inner releases freed nothing: the outer still holds both keys.
      expect((await valuesOn(direct, key('a'))).filter((v) => v === outer.value).length).toBeGreaterThanOrEqual(3);
      expect((await valuesOn(direct, key('b'))).filter((v) => v === outer.value).length).toBeGreaterThanOrEqual(3);
    });
    await eventually(async () => (await valuesOn(direct, key('a'))).every((v) => v === null));
    tap.stop();
    expect(acquiresOf(tap.lines, key('a'))).toBe(1); // only the outer went to the masters
  });

  it('sibling async contexts still exclude each other', async () => {
    const key = uniquePrefix('siblings');
    let inside = 0;
    let maxInside = 0;
    const work = (): Promise<void> =>
      redlock.using(key('r'), 5_000, { retryDelay: 20, retryJitter: 5 }, async () => {
        maxInside = Math.max(maxInside, ++inside);
        await sleep(80);
        inside--;
      });
    const start = performance.now();
    await Promise.all([work(), work(), work()]);
    expect(maxInside).toBe(1);
    expect(performance.now() - start).toBeGreaterThanOrEqual(230);
  });

  it('release order: an inner lock released after the outer frees nothing and does not fail', async () => {
    const key = uniquePrefix('order');
    let inner: Awaited<ReturnType<Redlock['acquire']>> | undefined;
    await redlock.using(key('r'), 5_000, async () => {
      inner = await redlock.acquire(key('r'), 5_000);
    });
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
    await expect(inner!.release()).resolves.toMatchObject({ released: false });
    // Outside any routine the same resource is acquired for real again.
    const again = await redlock.acquire(key('r'), 5_000);
    expect(again.reentered).toBe(false);
    await again.release();
  });

  it('a partial overlap with held resources is a ReentrancyError, not a wait for itself', async () => {
    const key = uniquePrefix('partial');
    await redlock.using(key('a'), 5_000, async () => {
      await expect(redlock.acquire([key('a'), key('c')], 5_000)).rejects.toBeInstanceOf(ReentrancyError);
    });
  });

  it('reentrant: false makes a nested acquire go to the masters, where the routine itself blocks it', async () => {
    const key = uniquePrefix('off');
    await redlock.using(key('r'), 5_000, async () => {
      await expect(redlock.acquire(key('r'), 5_000, { reentrant: false, retryCount: 0 })).rejects.toBeInstanceOf(ExecutionError);
    });
  });
});
