/**
 * The wait queue on the masters: a waiter's ticket holds its place in each key's queue, a free key
 * goes to the first live ticket, a release wakes that waiter wherever it runs, and a ticket whose
 * waiter stopped renewing it lapses on the master's own clock. Several Redlocks stand for several
 * processes (each its own connections, subscriptions and waiters).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ResourceLockedError, type Redlock } from '../../src/index.js';
import { QUEUE_SUFFIX, releasedChannel } from '../../src/script/codec.js';
import { sleep, uniquePrefix, useOwnMasters, eventually, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

/** ttl-id; the ttl for retryDelay 5000, retryJitter 0 and a 10 s lock (per-master timeout 500 ms): 2 × 5000 + 500. */
const TICKET = /^10500-[0-9a-f]{16}\.[0-9a-z]+$/;

/** The tickets in `resource`'s queue on every master, first in line first. */
function queuesOf(resource: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(resource + QUEUE_SUFFIX, '(0', '+inf')));
}

/** Whether `resource`'s queue key exists on each master. */
function queueKeysOf(resource: string): Promise<number[]> {
  return Promise.all(direct.map((client) => client.exists(resource + QUEUE_SUFFIX)));
}

/** Subscribers to `channel` on each master. */
function subscribersOf(channel: string): Promise<number[]> {
  return Promise.all(direct.map(async (client) => Number((await client.sendCommand<[string, number]>(['PUBSUB', 'NUMSUB', channel]))[1])));
}

/** Jain's fairness index of `counts`: 1 when all are equal, 1/n when one took everything. */
function jain(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return (sum * sum) / (counts.length * squares);
}

describe('fair queue', () => {
  it('waiters in different Redlocks (processes) are served in the order they arrived', async () => {
    const key = uniquePrefix('fifo-across')('r');
    const holder = own.lockOn();
    const held = await holder.acquire(key, 10_000);
    const order: string[] = [];
    const workers: Array<Promise<void>> = [];
    for (const name of ['first', 'second', 'third', 'fourth']) {
      // Long fallbacks: only a release announcement can wake them in time.
      const redlock = own.lockOn({ retryDelay: 5_000, retryJitter: 0 });
      workers.push(
        redlock.acquire(key, 10_000).then(async (lock) => {
          order.push(name);
          await sleep(20);
          await lock.release();
        }),
      );
      await sleep(40); // refused, and in line on every master, before the next arrives
    }
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 4));
    const queues = await queuesOf(key);
    expect(new Set(queues.map((queue) => queue.join()))).toHaveProperty('size', 1); // every master agrees
    const start = performance.now();
    await held.release();
    await Promise.all(workers);
    expect(order).toEqual(['first', 'second', 'third', 'fourth']);
    // Each hand-off woken by the announcement, not a 5 s fallback.
    expect(performance.now() - start).toBeLessThan(2_000);
    // The last release returned at quorum: the masters beyond it may still be running it.
    await eventually(async () => (await queueKeysOf(key)).every((exists) => exists === 0));
  });

  it('4 Redlocks × 4 workers on one key with default retry settings: no acquisition gives up, each Redlock gets its share', async () => {
    const key = uniquePrefix('hot')('r');
    const redlocks: Redlock[] = Array.from({ length: 4 }, () => own.lockOn());
    const acquired = [0, 0, 0, 0];
    const failures: unknown[] = [];
    const end = performance.now() + 2_000;
    const worker = async (index: number): Promise<void> => {
      while (performance.now() < end) {
        try {
          const lock = await redlocks[index]!.acquire(key, 10_000);
          await sleep(1);
          await lock.release();
          acquired[index]!++;
        } catch (error) {
          failures.push(error);
        }
      }
    };
    await Promise.all(redlocks.flatMap((_, index) => Array.from({ length: 4 }, () => worker(index))));
    expect(failures).toEqual([]);
    expect(acquired.every((count) => count > 0)).toBe(true);
    expect(jain(acquired)).toBeGreaterThan(0.8);
    await eventually(async () => (await queueKeysOf(key)).every((exists) => exists === 0));
  });

  it('4 Redlocks × 4 workers on one key with a 5 s retryDelay: every hand-off is woken by the release, none waits for the fallback', async () => {
    const key = uniquePrefix('hot-woken')('r');
    const redlocks: Redlock[] = Array.from({ length: 4 }, () => own.lockOn({ retryDelay: 5_000, retryJitter: 0 }));
    const waits: number[] = [];
    for (const redlock of redlocks) redlock.on('acquired', ({ waitMs }) => waits.push(waitMs));
    const end = performance.now() + 2_000;
    const worker = async (redlock: Redlock): Promise<void> => {
      while (performance.now() < end) {
        const lock = await redlock.acquire(key, 10_000);
        await sleep(1);
        await lock.release();
      }
    };
    await Promise.all(redlocks.flatMap((redlock) => Array.from({ length: 4 }, () => worker(redlock))));
    expect(waits.length).toBeGreaterThan(50);
    expect(Math.max(...waits)).toBeLessThan(4_000);
  });

  it('a newcomer does not take a free key past a waiter already in line; its giving up hands the key to that waiter', async () => {
    const key = uniquePrefix('barge')('r');
    // A holder that crashed with a key of no expiry: the waiter sleeps its whole fallback.
    await Promise.all(direct.map((client) => client.set(key, 'crashed-holder')));
    const waiter = own.lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const waiting = waiter.acquire(key, 10_000, { retryCount: -1 });
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 1));
    expect((await queuesOf(key))[0]![0]).toMatch(TICKET);
    // Its subscriptions took (and the one more attempt that follows was refused): it sleeps its 5 s.
    await eventually(async () => (await subscribersOf(releasedChannel)).every((count) => count >= 1));
    await sleep(200);
    // The key is freed without a release announcement: the waiter sleeps on.
    await Promise.all(direct.map((client) => client.del(key)));
    const newcomer = own.lockOn();
    const refused = await newcomer.acquire(key, 10_000, { retryCount: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ResourceLockedError);
    expect((refused as ResourceLockedError).attempts[0]!.outcomes.filter((o) => o.status === 'queued').length).toBeGreaterThanOrEqual(3);
    expect((refused as ResourceLockedError).message).toMatch(/queued/);
    // The newcomer's ticket left the queue of a free key, naming the first in line: the waiter.
    const start = performance.now();
    const lock = await waiting;
    expect(performance.now() - start).toBeLessThan(1_000);
    // On every master once the grant reached it (the acquire returned at quorum).
    await eventually(async () => (await Promise.all(direct.map((client) => client.get(key)))).every((value) => value === lock.value));
    // The newcomer's giving up freed the key, and every master handed it to the first in line
    // (issue 40): the waiter held by those hand-offs, with no attempt of its own, and left the line.
    expect(waiter.stats().acquisitions.handed).toBe(1);
    expect(await queuesOf(key)).toEqual(Array(5).fill([]));
    await lock.release();
    await eventually(async () => (await queueKeysOf(key)).every((exists) => exists === 0));
  });

  it('a cancelled waiter takes its ticket out of every queue', async () => {
    const key = uniquePrefix('cancel')('r');
    const held = await own.lockOn().acquire(key, 10_000);
    const controller = new AbortController();
    const waiting = own.lockOn({ retryDelay: 5_000, retryJitter: 0 }).acquire(key, 10_000, { retryCount: -1, signal: controller.signal });
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 1));
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(await queueKeysOf(key)).toEqual([0, 0, 0, 0, 0]);
    await held.release();
  });

  it("a dead waiter's ticket lapses on the master's clock, then the next in line gets the key", async () => {
    const key = uniquePrefix('lapse')('r');
    // A ticket older than anyone's, whose waiter died: its deadline is 400 ms from now on each master.
    await Promise.all(
      direct.map(async (client) => {
        const [seconds, micros] = await client.sendCommand<[string, string]>(['TIME']);
        const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        await client.zAdd(key + QUEUE_SUFFIX, [
          { score: 1, value: '1-dead' },
          { score: -(nowMs + 400), value: '~1-dead' },
        ]);
        await client.pExpire(key + QUEUE_SUFFIX, 5_000);
      }),
    );
    const redlock = own.lockOn({ retryDelay: 50, retryJitter: 0 });
    const start = performance.now();
    const lock = await redlock.acquire(key, 10_000, { retryCount: 100 });
    const waitedMs = performance.now() - start;
    expect(waitedMs).toBeGreaterThanOrEqual(300);
    expect(waitedMs).toBeLessThan(2_500);
    expect(lock.attempts).toBeGreaterThan(1);
    // The dead ticket was dropped on every master that granted, and the winner's own stays until its
    // release. A quorum may grant before the last master's deadline passes (each master's deadline
    // was set on its own TIME read): such a master refused, still holds the dead ticket and put the
    // winner's behind it, and the release takes both out.
    const [values, queues] = await Promise.all([Promise.all(direct.map((client) => client.get(key))), queuesOf(key)]);
    const granted = values.flatMap((value, index) => (value === lock.value ? [index] : []));
    expect(granted.length).toBeGreaterThanOrEqual(3);
    queues.forEach((queue, index) => expect(queue).toEqual(granted.includes(index) ? [lock.ticket] : ['1-dead', lock.ticket]));
    await lock.release();
    await eventually(async () => (await queueKeysOf(key)).every((exists) => exists === 0));
  });

  it('a holder granted by a quorum leaves no ticket on the master that refused it: its release takes it out', async () => {
    const key = uniquePrefix('stale')('r');
    await direct[4]!.set(key, 'someone-else', { PX: 10_000 });
    const redlock = own.lockOn();
    const lock = await redlock.acquire(key, 10_000);
    // Master 4 refused it and put its ticket in line there.
    await eventually(async () => (await queuesOf(key))[4]!.length === 1);
    expect((await queuesOf(key)).slice(0, 4)).toEqual([[], [], [], []]);
    await lock.release();
    await eventually(async () => (await queueKeysOf(key)).every((exists) => exists === 0));
  });
});
