/**
 * The waiting line's liveness on real masters (issue 25): a waiter is in the line only of the
 * resources that refused it, so it never keeps anyone out of a free resource (no hold-and-wait); a
 * ticket's place comes from the masters' clocks, so a process whose clock is minutes off neither
 * jumps the line nor is starved; and release announcements reach waiters whatever the clients'
 * keyPrefix. Several Redlocks stand for several processes; one test runs a real second process.
 */
import { Redis as IORedis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { Redlock, ResourceLockedError } from '../../src/index.js';
import { QUEUE_SUFFIX } from '../../src/scripts/index.js';
import { collectOutput, exitWithin, spawnScript } from '../harness/processes.js';
import { oracle } from '../harness/oracle-session.js';
import { eventually, sleep, uniquePrefix, urlOf, useOwnMasters, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

/** The tickets in `resource`'s queue on every master, first in line first. */
function queuesOf(resource: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(resource + QUEUE_SUFFIX, '(0', '+inf')));
}

describe('the line: no hold-and-wait', () => {
  it('a waiter for [a, b] refused on a joins only a\'s line: the holder of a takes the free b at once', async () => {
    const key = uniquePrefix('hold-and-wait');
    const [a, b] = [key('a'), key('b')];
    const holder = own.lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const waiter = own.lockOn({ retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const heldA = await holder.acquire(a, 10_000);
    const both = waiter.acquire([a, b], 10_000);
    await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 1));
    // The masters' truth: the waiter stands in a's line only; b is free with nobody in its line.
    expect(await queuesOf(b)).toEqual([[], [], [], [], []]);
    // The holder of a takes b in one attempt: nothing keeps it out.
    const heldB = await holder.acquire(b, 10_000, { retryCount: 0 });
    expect(heldB.attempts).toBe(1);
    await heldB.release();
    await heldA.release();
    const lock = await both; // a's release names it first in line
    expect(lock.resources).toEqual([a, b]);
    await lock.release();
  });

  it('nested order (a, then b inside it) beside a waiter for [a, b] with retryCount -1: both are served', async () => {
    const key = uniquePrefix('nested-order');
    const [a, b] = [key('a'), key('b')];
    const nested = own.lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const together = own.lockOn({ retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const served: string[] = [];
    const inner = nested.using(a, 10_000, async () => {
      await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 1)); // the other waits for a
      await nested.using(b, 10_000, { retryCount: 3 }, () => served.push('a then b'));
    });
    await sleep(50); // a is held before the other asks
    const pair = together.using([a, b], 10_000, () => served.push('[a, b]'));
    await Promise.all([inner, pair]);
    expect(served).toEqual(['a then b', '[a, b]']);
  });

  it('a waiter first in the line of a free key but refused on another leaves that line, and wakes whoever it held back', async () => {
    const key = uniquePrefix('free-head');
    const [a, b] = [key('a'), key('b')];
    const holderA = own.lockOn();
    const holderB = own.lockOn();
    const waiter = own.lockOn({ retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const third = own.lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const heldA = await holderA.acquire(a, 10_000);
    const heldB = await holderB.acquire(b, 10_000);
    const both = waiter.acquire([a, b], 10_000);
    // Both keys refused it: it stands in both lines.
    await eventually(async () => [...(await queuesOf(a)), ...(await queuesOf(b))].every((queue) => queue.length === 1));
    const pendingB = third.acquire(b, 10_000); // in b's line behind the waiter
    await eventually(async () => (await queuesOf(b)).every((queue) => queue.length === 2));
    const releasedAt = performance.now();
    await heldB.release();
    // b's release names the waiter first; its attempt is refused on a, so it leaves b's line and the
    // third process, woken by that, takes b: well before its 5 s retryDelay.
    const lockB = await pendingB;
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    await eventually(async () => (await queuesOf(b)).every((queue) => !queue.some((ticket) => ticket !== lockB.ticket)));
    await lockB.release();
    await heldA.release();
    const lock = await both;
    await lock.release();
  });
});

describe('the line: order by the masters\' clocks', () => {
  it('a process whose clock is 10 minutes behind takes a hot key in a loop: a process with a correct clock is still served', async () => {
    const resource = uniquePrefix('offset-clock')('hot');
    const urls = own.ports.map(urlOf);
    // A real second process whose Date.now() runs 10 minutes behind (its monotonic clock untouched).
    const contender = spawnScript(`
      const realNow = Date.now;
      Date.now = () => realNow() - 600_000;
      const { Redlock } = await import('./src/index.ts');
      const redlock = new Redlock(${JSON.stringify(urls)}, { retryCount: -1 });
      const end = performance.now() + 6_000;
      let count = 0;
      // Three workers, so one of its tickets is always in line when a lock is released.
      const worker = async () => {
        while (performance.now() < end) {
          const lock = await redlock.acquire(${JSON.stringify(resource)}, 2_000);
          if (count++ === 0) console.log('looping');
          await new Promise((resolve) => setTimeout(resolve, 5));
          await lock.release();
        }
      };
      await Promise.all([worker(), worker(), worker()]);
      console.log('acquired ' + count);
      await redlock.quit();
    `);
    const output = collectOutput(contender);
    const exited = exitWithin(contender, 20_000);
    await eventually(() => output().includes('looping'), 10_000);
    await sleep(200);
    const redlock = own.lockOn(); // default retries: 10 × (200 ± 100) ms
    const startedAt = performance.now();
    const lock = await redlock.acquire(resource, 2_000).catch((error: unknown) => error);
    const waitedMs = performance.now() - startedAt;
    expect(lock, `waited ${Math.round(waitedMs)} ms; contender: ${output()}`).not.toBeInstanceOf(ResourceLockedError);
    if (lock instanceof ResourceLockedError) return;
    await (lock as Awaited<ReturnType<Redlock['acquire']>>).release();
    expect(await exited).toBe(0);
    expect(output()).toMatch(/acquired \d+/);
  });
});

describe('the line: announcements with an ioredis keyPrefix', () => {
  const prefixedRedlock = (prefix: string, settings = {}): { redlock: Redlock; clients: IORedis[] } => {
    const clients = own.ports.map((port) => new IORedis({ host: '127.0.0.1', port, keyPrefix: prefix }));
    return { redlock: new Redlock(clients, settings), clients };
  };

  for (const prefix of ['app:', '1app:']) {
    it(`prefix ${JSON.stringify(prefix)}: a reader and a permit waiter in other processes wake on the release, not at retryDelay`, async () => {
      const name = uniquePrefix('prefix-wake')('doc');
      const writer = prefixedRedlock(prefix);
      const reader = prefixedRedlock(prefix, { retryDelay: 5_000, retryJitter: 0 });
      const permits = prefixedRedlock(prefix);
      const permitWaiter = prefixedRedlock(prefix, { retryDelay: 5_000, retryJitter: 0 });
      try {
        const written = await writer.redlock.readWrite(name).write.acquire(10_000);
        oracle.ignore(written); // keys under the client's prefix, where the oracle does not look
        const pendingRead = reader.redlock.readWrite(name).read.acquire(10_000);
        const permit = await permits.redlock.semaphore(name + ':pool', 1).acquire(10_000);
        oracle.ignore(permit);
        const pendingPermit = permitWaiter.redlock.semaphore(name + ':pool', 1).acquire(10_000);
        await sleep(300); // both refused once, asleep for up to 5 s
        const releasedAt = performance.now();
        await Promise.all([written.release(), permit.release()]);
        const [read, next] = await Promise.all([pendingRead, pendingPermit]);
        oracle.ignore(read);
        oracle.ignore(next);
        expect(performance.now() - releasedAt).toBeLessThan(1_000); // not the 5 s retryDelay
        await Promise.all([read.release(), next.release()]);
      } finally {
        for (const side of [writer, reader, permits, permitWaiter]) {
          await side.redlock.quit();
          for (const client of side.clients) client.disconnect();
        }
      }
    });
  }
});
