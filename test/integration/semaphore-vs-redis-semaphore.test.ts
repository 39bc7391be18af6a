/**
 * Why a semaphore over independent masters needs more than "a majority of masters each admit ≤ limit":
 * redis-semaphore 5.x's RedlockSemaphore counts holders on each master and accepts any majority.
 * With limit 2 on 5 masters, A admitted by masters {1,2,3} and B by {3,4,5} leave masters 1, 2, 4
 * and 5 with a free place each, so C is admitted by {1,2,4,5}: three holders, every master within
 * its limit, each master behaving correctly. Each contender reaches only some masters (a network
 * partition): here a client to an unreachable master fails at once, as an offline one does.
 *
 * Ours under the same partitions: a permit is a Redlock on one of `limit` slots, and C cannot get
 * one slot on a majority, so it is refused: at most 2 permits, which the safety oracle checks too.
 */
import { Redis as IORedis } from 'ioredis';
import { RedlockSemaphore } from 'redis-semaphore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, type Lock, type Redlock } from '../../src/index.js';
import { PERMIT_INFIX } from '../../src/primitives/semaphore.js';
import { FaultProxy } from '../../src/testing/proxy.js';
import { freePort } from '../../src/testing/redis-server.js';
import { redlockOn, uniquePrefix, useSharedMasters, valuesOn, type DirectClient } from '../harness/cluster.js';

const shared = useSharedMasters();
let direct: DirectClient[];
let ports: number[];
beforeAll(() => ({ direct, ports } = shared));

/** Which masters (0-based) each contender reaches. */
const REACHES = { A: [0, 1, 2], B: [2, 3, 4], C: [0, 1, 3, 4] } as const;

describe('a limit-2 semaphore on 5 masters, contenders partitioned: A reaches 1-3, B 3-5, C 1, 2, 4, 5', () => {
  const opened: IORedis[] = [];
  afterAll(() => {
    for (const client of opened) client.disconnect();
  });

  it('redis-semaphore 5.x RedlockSemaphore admits all three: three holders of a limit-2 semaphore', async () => {
    const key = uniquePrefix('redis-semaphore')('pool');
    const unreachable = await freePort(); // nothing listens there
    const clientsFor = (reaches: readonly number[]): IORedis[] =>
      ports.map((port, index) => {
        const client = reaches.includes(index)
          ? new IORedis({ port, host: '127.0.0.1' })
          : new IORedis({ port: unreachable, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });
        client.on('error', () => undefined);
        opened.push(client);
        return client;
      });
    const options = { lockTimeout: 10_000, acquireAttemptsLimit: 1, refreshInterval: 0, identifier: '' };
    const admitted: string[] = [];
    for (const [name, reaches] of Object.entries(REACHES)) {
      const semaphore = new RedlockSemaphore(clientsFor(reaches), key, 2, { ...options, identifier: `holder-${name}` });
      if (await semaphore.tryAcquire()) admitted.push(name);
    }
    expect(admitted).toEqual(['A', 'B', 'C']);
    // What the masters hold (redis-semaphore prefixes its keys): each at its limit of 2, and three holders between them.
    const holders = await Promise.all(direct.map((client) => client.zRange(`semaphore:${key}`, 0, -1)));
    expect(holders.map((members) => [...members].sort())).toEqual([
      ['holder-A', 'holder-C'],
      ['holder-A', 'holder-C'],
      ['holder-A', 'holder-B'],
      ['holder-B', 'holder-C'],
      ['holder-B', 'holder-C'],
    ]);
    await Promise.all(direct.map((client) => client.del(`semaphore:${key}`)));
  });

  it('ours grants at most two permits under the same partitions: C finds no slot free on a majority', async () => {
    const name = uniquePrefix('ours-partitioned')('pool');
    const proxies: FaultProxy[] = [];
    const redlocks: Redlock[] = [];
    const permits: Lock[] = [];
    try {
      const semaphores = await Promise.all(
        Object.values(REACHES).map(async (reaches) => {
          const through = await Promise.all(ports.map((port) => FaultProxy.start(port)));
          proxies.push(...through);
          through.forEach((proxy, index) => {
            if (!reaches.includes(index as never)) proxy.mode = 'refuse';
          });
          const redlock = redlockOn(
            through.map((proxy) => proxy.port),
            { retryCount: 3, retryDelay: 20, nodeTimeout: 300 },
          );
          redlocks.push(redlock);
          return redlock.semaphore(name, 2);
        }),
      );
      const [a, b, c] = semaphores as [(typeof semaphores)[0], (typeof semaphores)[0], (typeof semaphores)[0]];
      permits.push(await a.acquire(10_000));
      permits.push(await b.acquire(10_000));
      const refused = await c.acquire(10_000).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ExecutionError);
      // A holds slot 0 on masters 1-3, B slot 1 on 3-5 (after one split attempt): C got neither.
      expect(permits.map((permit) => (permit.lease as { slot: number }).slot)).toEqual([0, 1]);
      const slot0 = await valuesOn(direct, name + PERMIT_INFIX + 0);
      const slot1 = await valuesOn(direct, name + PERMIT_INFIX + 1);
      expect(slot0.slice(0, 3)).toEqual([permits[0]!.value, permits[0]!.value, permits[0]!.value]);
      expect(slot1.slice(2)).toEqual([permits[1]!.value, permits[1]!.value, permits[1]!.value]);
      expect([...slot0, ...slot1].every((value) => value === null || value === permits[0]!.value || value === permits[1]!.value)).toBe(true);
    } finally {
      await Promise.all(permits.map((permit) => permit.release().catch(() => undefined)));
      for (const redlock of redlocks) await redlock.quit();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});
