import { beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, Lock, LockExpiredError, LockReleasedError, type Redlock } from '../../src/index.js';
import {
  eventually,
  sleep,
  uniquePrefix,
  valuesOn,
  useSharedMasters,
  type DirectClient,
} from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';

const shared = useSharedMasters();
let direct: DirectClient[];
let redlock: Redlock;
beforeAll(() => ({ direct, redlock } = shared));

const heldEverywhere = async (key: string, value: string): Promise<boolean> =>
  (await valuesOn(direct, key)).every((v) => v === value);

describe('extend', () => {
  it('moves expiration on the same lock object and refreshes the PTTL on the masters', async () => {
    const key = uniquePrefix('extend');
    const lock = await redlock.acquire([key('a'), key('b')], 1_000);
    const first = lock.expiration;
    await sleep(50);
    const before = Date.now();
    const same = await lock.extend(10_000);
    expect(same).toBe(lock);
    // Validity is recomputed from the extend's own start: about now + 10 s − drift.
    expect(lock.expiration).toBeGreaterThan(first + 8_000);
    expect(lock.expiration).toBeGreaterThanOrEqual(before + 10_000 - 102 - 50);
    expect(lock.expiration).toBeLessThanOrEqual(Date.now() + 10_000 - 102);
    await eventually(async () => {
      const pttls = await Promise.all(direct.map((client) => client.pTTL(key('b'))));
      return pttls.every((pttl) => pttl > 9_000);
    });
    await lock.release();
  });

  it('redlock.extend(lock, ttl) and redlock.release(lock) are the node-redlock shapes', async () => {
    const key = uniquePrefix('shapes');
    const lock = await redlock.acquire(key('r'), 1_000);
    await expect(redlock.extend(lock, 3_000)).resolves.toBe(lock);
    await expect(redlock.release(lock)).resolves.toMatchObject({ released: true });
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
  });

  it('extending an expired lock rejects with LockExpiredError without touching the masters', async () => {
    const key = uniquePrefix('expired');
    const lock = await redlock.acquire(key('r'), 100);
    await sleep(150);
    await expect(lock.extend(1_000)).rejects.toBeInstanceOf(LockExpiredError);
    await expect(lock.extend(1_000)).rejects.toThrow(/expired at .*acquire it again/);
    expect(await valuesOn(direct, key('r'))).toEqual(Array(5).fill(null));
  });

  it('extending a lost lock (gone from 3 of 5 masters) rejects with ExecutionError saying it is lost', async () => {
    const key = uniquePrefix('lost');
    const lock = await redlock.acquire(key('r'), 5_000);
    await eventually(() => heldEverywhere(key('r'), lock.value));
    oracle.ignore(lock); // its keys vanish behind the library's back: outside the assumptions
    await Promise.all(direct.slice(0, 3).map((client) => client.del(key('r'))));
    const error = await lock.extend(5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    expect((error as Error).message).toMatch(/is lost: 3 of 5 masters had answered that they no longer hold it/);
    expect((error as ExecutionError).attempts).toHaveLength(1);
    await lock.release();
  });

  it('extending a lock whose key another client now holds does not touch that client’s key', async () => {
    const key = uniquePrefix('stolen');
    const lock = await redlock.acquire(key('r'), 5_000);
    await eventually(() => heldEverywhere(key('r'), lock.value));
    oracle.ignore(lock); // its keys are taken behind the library's back: outside the assumptions
    await Promise.all(direct.map((client) => client.set(key('r'), 'thief', { PX: 2_000 })));
    await expect(lock.extend(60_000)).rejects.toBeInstanceOf(ExecutionError);
    for (const client of direct) expect(await client.pTTL(key('r'))).toBeLessThanOrEqual(2_000);
    await lock.release();
    expect(await valuesOn(direct, key('r'))).toEqual(Array(5).fill('thief'));
  });

  it('extending a released lock rejects with LockReleasedError', async () => {
    const key = uniquePrefix('released');
    const lock = await redlock.acquire(key('r'), 1_000);
    await lock.release();
    await expect(lock.extend(1_000)).rejects.toBeInstanceOf(LockReleasedError);
  });
});

describe('release', () => {
  it('a lock on two resources released while a waiter stands in line for one: released on every master, not an error', async () => {
    const key = uniquePrefix('release-two-in-line');
    const lock = await redlock.acquire([key('a'), key('b')], 10_000);
    const waiting = redlock.acquire(key('a'), 10_000, { retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    // The waiter's ticket is in a's line on every master: the release names it (its reply's head).
    await eventually(async () => (await Promise.all(direct.map((client) => client.zCount(key('a') + ':redlock-queue', '(0', '+inf')))).every((n) => n === 1));
    const result = await lock.release();
    expect(result.released).toBe(true);
    expect(result.heldBy).toBeGreaterThanOrEqual(3); // decided at quorum: the others may still be on their way
    expect(result.outcomes.map((outcome) => outcome.status)).not.toContain('error');
    // The release answers at quorum: the other masters' deletes may still be on their way.
    await eventually(async () => (await valuesOn(direct, key('b'))).every((value) => value === null));
    await (await waiting).release();
  });

  it('deletes the keys on every master', async () => {
    const key = uniquePrefix('release');
    const lock = await redlock.acquire([key('a'), key('b')], 5_000);
    await eventually(() => heldEverywhere(key('b'), lock.value));
    const result = await lock.release();
    expect(result.released).toBe(true);
    expect(result.heldBy).toBeGreaterThanOrEqual(3);
    await eventually(async () => [...(await valuesOn(direct, key('a'))), ...(await valuesOn(direct, key('b')))].every((v) => v === null));
  });

  it('releasing an expired lock resolves promptly with released false and heldBy 0', async () => {
    const key = uniquePrefix('releaseexpired');
    const lock = await redlock.acquire(key('r'), 50);
    await sleep(100);
    const start = performance.now();
    const result = await lock.release();
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(result).toMatchObject({ released: false, heldBy: 0 });
    // ttl 50 means a 10 ms per-master timeout: on a loaded machine some answers come late.
    await eventually(() => result.outcomes.filter((o) => o.status === 'lost' || o.late === 'lost').length === 5);
  });

  it('reports how many masters still held a partly expired lock', async () => {
    const key = uniquePrefix('partial');
    const lock = await redlock.acquire(key('r'), 5_000);
    await eventually(() => heldEverywhere(key('r'), lock.value));
    oracle.ignore(lock); // its keys vanish behind the library's back: outside the assumptions
    await Promise.all(direct.slice(0, 3).map((client) => client.del(key('r'))));
    const result = await lock.release();
    expect(result.released).toBe(false);
    expect(result.heldBy).toBeLessThanOrEqual(2);
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
  });

  it('never deletes a key that holds another value (compare-and-delete)', async () => {
    const key = uniquePrefix('cad');
    const lock = await redlock.acquire(key('r'), 100);
    await sleep(150);
    await Promise.all(direct.map((client) => client.set(key('r'), 'next-holder', { PX: 5_000 })));
    await lock.release();
    expect(await valuesOn(direct, key('r'))).toEqual(Array(5).fill('next-holder'));
  });

  it('a key of another type under a resource name refuses the lock and survives release', async () => {
    const key = uniquePrefix('wrongtype');
    await Promise.all(direct.map((client) => client.hSet(key('r'), 'field', 'value')));
    const error = await redlock.acquire(key('r'), 1_000, { retryCount: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    expect((error as ExecutionError).attempts[0]!.outcomes.every((o) => o.status === 'locked' || o.status === 'pending')).toBe(true);
    for (const client of direct) expect(await client.type(key('r'))).toBe('hash');
    await Promise.all(direct.map((client) => client.del(key('r'))));
  });

  it('`await using` releases the lock at the end of the scope', async () => {
    const key = uniquePrefix('using');
    let value = '';
    {
      await using lock = await redlock.acquire(key('r'), 5_000);
      value = lock.value;
      expect(lock).toBeInstanceOf(Lock);
      await eventually(() => heldEverywhere(key('r'), value));
    }
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
  });
});
