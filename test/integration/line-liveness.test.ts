/**
 * The waiting line's liveness on real masters (issue 25): a waiter is in the line only of the
 * resources that refused it, so it never keeps anyone out of a free resource (no hold-and-wait); a
 * ticket's place comes from the masters' clocks, so a process whose clock is minutes off neither
 * jumps the line nor is starved; and release announcements reach waiters whatever the clients'
 * keyPrefix. Several Redlocks stand for several processes; one test runs a real second process.
 */
import { Redis as IORedis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redlock, ResourceLockedError } from '../../src/index.js';
import { QUEUE_SUFFIX } from '../../src/script/codec.js';
import { collectOutput, exitWithin, spawnScript } from '../harness/processes.js';
import { oracle } from '../harness/oracle-session.js';
import { FaultProxy } from '../../src/testing/proxy.js';
import { eventually, redlockOn, sleep, uniquePrefix, urlOf, useOwnMasters, valuesOn, warmUp, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

/**
 * A Redlock standing for one process, its connections to all five masters ready: an acquire decides
 * at quorum, and a lock still on its way to a late master would be refused there by a waiter that
 * came first, leaving these tests' lines other than they say.
 */
async function processOn(settings?: Parameters<typeof own.lockOn>[0]): Promise<Redlock> {
  const redlock = own.lockOn(settings);
  await warmUp(redlock, direct);
  return redlock;
}

/** Master `index`'s TIME in ms. */
async function masterNow(index = 0): Promise<number> {
  const [seconds, micros] = await direct[index]!.sendCommand<[string, string]>(['TIME']);
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * A ticket in `resource`'s line on every master, written as the script writes one: placed at
 * `placeMs` on the masters' clock, lapsing `ttlMs` from now on each master's TIME. It stands for a
 * waiter whose process is stopped just then (named first in line, its attempt not sent yet).
 */
async function standInLine(resource: string, ticket: string, placeMs: number, ttlMs: number): Promise<void> {
  await Promise.all(
    direct.map(async (client, index) => {
      await client.zAdd(resource + QUEUE_SUFFIX, [
        { score: placeMs, value: ticket },
        { score: -((await masterNow(index)) + ttlMs), value: '~' + ticket },
      ]);
      await client.pExpire(resource + QUEUE_SUFFIX, ttlMs + 1_000);
    }),
  );
}

/** A ticket standInLine() wrote leaves `resource`'s line on every master (its waiter gave up), its mark with it; nothing is announced. */
async function leaveLine(resource: string, ticket: string): Promise<void> {
  await Promise.all(direct.map((client) => client.zRem(resource + QUEUE_SUFFIX, [ticket, '~' + ticket])));
}

/** The tickets in `resource`'s queue on every master, first in line first. */
function queuesOf(resource: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(resource + QUEUE_SUFFIX, '(0', '+inf')));
}

describe('the line: no hold-and-wait', () => {
  it('a waiter for [a, b] refused on a held a keeps a reservation on the free b for half a ticket ttl: a newer call for b waits for it, and the holder of a takes b once it ends (no deadlock)', async () => {
    const key = uniquePrefix('reservation');
    const [a, b] = [key('a'), key('b')];
    const holder = await processOn({ retryCount: -1, retryDelay: 100, retryJitter: 0 });
    const waiter = await processOn({ retryCount: -1, retryDelay: 300, retryJitter: 0, nodeTimeout: 400 });
    const heldA = await holder.acquire(a, 10_000);
    const both = waiter.acquire([a, b], 10_000);
    // The masters' truth: the waiter stands in a's line and in b's, with the end of its reservation of b.
    await eventually(async () => (await queuesOf(a)).filter((queue) => queue.length === 1).length >= 3 && (await queuesOf(b)).filter((queue) => queue.length === 1).length >= 3);
    const [ticket] = (await queuesOf(b)).find((queue) => queue.length === 1)!;
    const ticketTtlMs = Number(ticket!.split('-')[0]);
    expect(ticketTtlMs).toBe(2 * 300 + 400);
    const reservedUntil = await Promise.all(direct.map((client) => client.zScore(b + QUEUE_SUFFIX, '^' + ticket)));
    expect(reservedUntil.filter((score) => score !== null).length).toBeGreaterThanOrEqual(3);
    // The holder of a asks for b while it holds a (nested): kept out by the reservation, then granted
    // when it ends, half a ticket ttl after it began at most (plus a retry), and never for good.
    const askedAt = performance.now();
    const heldB = await holder.acquire(b, 10_000);
    expect(heldB.attempts).toBeGreaterThan(1);
    expect(performance.now() - askedAt).toBeLessThan(ticketTtlMs + 5_000);
    await heldB.release();
    await heldA.release();
    const lock = await both;
    expect(lock.resources).toEqual([a, b]);
    await lock.release();
    // Its release took the reservation's end out too: nothing of the call is left in the queues.
    await eventually(async () => (await Promise.all(direct.map((client) => client.zScore(b + QUEUE_SUFFIX, '^' + ticket)))).every((score) => score === null));
  });

  it('refused by a held a behind another waiter for a, a waiter for [a, b] takes no place in the line of the free b, even behind a waiter there: once that one goes, the holder of a takes b at once', async () => {
    const key = uniquePrefix('stand-behind');
    const [a, b] = [key('a'), key('b')];
    const holder = await processOn();
    const heldA = await holder.acquire(a, 10_000);
    // Two waiters whose processes stopped: one ahead in a's line (so the waiter below reserves
    // nothing), one ahead in b's line (so b refuses it by the line).
    await standInLine(a, '10500-ahead-in-a', (await masterNow()) - 60_000, 20_000);
    await standInLine(b, '10500-ahead-in-b', (await masterNow()) - 60_000, 20_000);
    const waiter = await processOn({ retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const both = waiter.acquire([a, b], 10_000);
    await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 2));
    // The masters' truth: it stands in a's line only.
    expect(await queuesOf(b)).toEqual(direct.map(() => ['10500-ahead-in-b']));
    // The waiter ahead in b's line gives up; the holder of a asks for b (nested): nobody is in its
    // way (the waiter for [a, b] would have been, until its next attempt, seconds away).
    await leaveLine(b, '10500-ahead-in-b');
    const heldB = await holder.acquire(b, 10_000, { retryCount: 0 });
    expect(heldB.attempts).toBe(1);
    await heldB.release();
    await leaveLine(a, '10500-ahead-in-a');
    await heldA.release();
    await (await both).release();
  });

  it('a waiter for [a, b] against processes that keep taking a and b alone is served, and no acquire begun after it passes it (issue 40)', async () => {
    const key = uniquePrefix('multi-starve');
    const [a, b] = [key('a'), key('b')];
    // The four workers share one process, as a service's request handlers do.
    const shared = await processOn({ retryCount: -1 });
    const loopers = [a, a, b, b].map((resource) => ({ resource, redlock: shared }));
    const waiter = await processOn({ retryCount: -1 });
    const grants: { startedAt: number; grantedAt: number }[] = [];
    let stop = false;
    const loops = loopers.map(async ({ resource, redlock }) => {
      while (!stop) {
        const startedAt = performance.now();
        await redlock.using(resource, 5_000, async () => {
          grants.push({ startedAt, grantedAt: performance.now() });
          await sleep(1);
        });
      }
    });
    await sleep(500); // both keys hot
    const startedAt = performance.now();
    const lock = await waiter.acquire([a, b], 5_000);
    const grantedAt = performance.now();
    stop = true;
    await lock.release();
    await Promise.all(loops);
    // Passed by none begun after it (200 ms: its first attempt on the masters, on a loaded machine).
    const passers = grants.filter((grant) => grant.startedAt > startedAt + 200 && grant.grantedAt < grantedAt);
    expect(passers).toEqual([]);
    expect(grantedAt - startedAt).toBeLessThan(10_000);
  });

  it('a waiter for [a, b] whose reservation of b ran out while a slow holder kept a then waits for b alone as any waiter does: a process that keeps taking b does not pass it once a frees (issue 40, model L5)', async () => {
    const key = uniquePrefix('spent-reservation');
    const [a, b] = [key('a'), key('b')];
    const slow = await processOn();
    const waiter = await processOn({ retryCount: -1, retryDelay: 300, retryJitter: 0, nodeTimeout: 400 });
    const looper = await processOn({ retryCount: -1 });
    const heldA = await slow.acquire(a, 10_000);
    const both = waiter.acquire([a, b], 10_000);
    // Refused by the held a, it reserves the free b (for half its ticket ttl, 500 ms).
    await eventually(async () => (await Promise.all(direct.map((client) => client.zRangeByScore(b + QUEUE_SUFFIX, '-inf', '(0')))).filter((members) => members.some((member) => member.startsWith('^'))).length >= 3);
    const grants: { startedAt: number; grantedAt: number }[] = [];
    let stop = false;
    const loops = [b, b].map(async (resource) => {
      while (!stop) {
        const startedAt = performance.now();
        await looper.using(resource, 5_000, async () => {
          grants.push({ startedAt, grantedAt: performance.now() });
          await sleep(1);
        });
      }
    });
    await sleep(1_500); // the slow holder outlasts the reservation; b goes on being taken
    const releasedAt = performance.now();
    await heldA.release();
    const lock = await both;
    const grantedAt = performance.now();
    stop = true;
    await lock.release();
    await Promise.all(loops);
    expect(grants.length).toBeGreaterThan(0);
    // Once a is free, the waiter waits for b alone, first in its line: no acquire of b begun after
    // that (200 ms: its attempt on the masters, on a loaded machine) is granted before it.
    const passers = grants.filter((grant) => grant.startedAt > releasedAt + 200 && grant.grantedAt < grantedAt);
    expect(passers).toEqual([]);
    expect(grantedAt - releasedAt).toBeLessThan(5_000);
  });

  it('nested order (a, then b inside it) beside a waiter for [a, b] with retryCount -1: both are served', async () => {
    const key = uniquePrefix('nested-order');
    const [a, b] = [key('a'), key('b')];
    const nested = await processOn({ retryDelay: 5_000, retryJitter: 0 });
    // Its ticket ttl is 1 s (2 × 300 + 400): the reservation it keeps on the free b while a is held
    // keeps the nested call for b out half that long at most.
    const together = await processOn({ retryCount: -1, retryDelay: 300, retryJitter: 0, nodeTimeout: 400 });
    const served: string[] = [];
    const inner = nested.using(a, 10_000, async () => {
      await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 1)); // the other waits for a
      await nested.using(b, 10_000, { retryCount: 10 }, () => served.push('a then b'));
    });
    await sleep(50); // a is held before the other asks
    const pair = together.using([a, b], 10_000, () => served.push('[a, b]'));
    await Promise.all([inner, pair]);
    expect(served).toEqual(['a then b', '[a, b]']);
  });

  it('a waiter first in the line of a free key but refused on another keeps that line for half a ticket ttl, then leaves it and wakes whoever it held back', async () => {
    const key = uniquePrefix('free-head');
    const [a, b] = [key('a'), key('b')];
    const holderA = await processOn();
    const holderB = await processOn();
    const waiter = await processOn({ retryCount: -1, retryDelay: 300, retryJitter: 0, nodeTimeout: 400 });
    const third = await processOn({ retryDelay: 5_000, retryJitter: 0 });
    const heldA = await holderA.acquire(a, 10_000);
    const heldB = await holderB.acquire(b, 10_000);
    const both = waiter.acquire([a, b], 10_000);
    // Both keys refused it: it stands in both lines.
    await eventually(async () => [...(await queuesOf(a)), ...(await queuesOf(b))].every((queue) => queue.length === 1));
    const ticketTtlMs = Number((await queuesOf(a))[0]![0]!.split('-')[0]);
    const pendingB = third.acquire(b, 10_000); // in b's line behind the waiter
    await eventually(async () => (await queuesOf(b)).every((queue) => queue.length === 2));
    const releasedAt = performance.now();
    await heldB.release();
    // b's release names the waiter first; its attempt is refused on the held a, so it keeps b as a
    // reservation for half a ticket ttl, then leaves b's line, and the third process, told when the
    // reservation ends (its refusal's detail), takes b: well before its 5 s retryDelay.
    const lockB = await pendingB;
    expect(performance.now() - releasedAt).toBeLessThan(ticketTtlMs + 2_000);
    // Out of b's line on a majority (b's release resolved at a quorum, so on the others the
    // waiter's attempt may have come before the release, found b held and kept an ordinary place
    // there, until its next attempt; a minority, which keeps nobody out).
    await eventually(async () => (await queuesOf(b)).filter((queue) => !queue.some((ticket) => ticket !== lockB.ticket)).length >= 3);
    await lockB.release();
    await heldA.release();
    const lock = await both;
    await lock.release();
  });
});

describe('the line: a ticket goes by its place, and stands only where it was refused', () => {
  it('refused on a held key, a waiter reserves a free key ahead of a later ticket for half a ticket ttl, and then leaves it to that ticket', async () => {
    const key = uniquePrefix('behind-later');
    const [a, b] = [key('a'), key('b')];
    const holder = await processOn();
    const heldA = await holder.acquire(a, 10_000);
    // A later waiter for b alone, named first in its line and about to take it (b is free).
    await standInLine(b, '10500-later', (await masterNow()) + 60_000, 10_000);
    const waiter = await processOn({ retryCount: -1, retryDelay: 300, retryJitter: 0, nodeTimeout: 400 });
    const both = waiter.acquire([a, b], 10_000);
    await eventually(async () => (await queuesOf(a)).filter((queue) => queue.length === 1).length >= 3);
    const [ticket] = (await queuesOf(a)).find((queue) => queue.length === 1)!;
    // The masters' truth: it waits in a's line, and holds its earlier place in b's, ahead of the later one.
    expect((await queuesOf(b)).filter((queue) => queue.join() === [ticket, '10500-later'].join()).length).toBeGreaterThanOrEqual(3);
    // Half a ticket ttl (0.5 s) later its reservation is over: its next attempt leaves b's line to the later ticket.
    await eventually(async () => (await queuesOf(b)).filter((queue) => queue.join() === '10500-later').length >= 3, 10_000);
    await leaveLine(b, '10500-later');
    await heldA.release();
    await (await both).release();
  });

  it('refused only behind an earlier ticket on one key, a waiter leaves the line of a free key it heads: another process takes that key at once', async () => {
    const key = uniquePrefix('earlier-only');
    const [a, b] = [key('a'), key('b')];
    const holder = await processOn();
    const heldA = await holder.acquire(a, 10_000);
    // An earlier waiter for b alone, first in its line and about to take it (b is free): its process
    // stopped, so its ticket stands until it lapses: not before the test ends (had it lapsed before
    // a's release, as under load it did at 4 s, the waiter would take both and stay in a's line).
    await standInLine(b, '10500-earlier', (await masterNow()) - 60_000, 20_000);
    const waiter = await processOn({ retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const both = waiter.acquire([a, b], 10_000);
    await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 1));
    // a's release names the waiter first there; b still refuses it (the earlier ticket). It cannot
    // take a now, so it leaves a's line: a is free for anyone.
    await heldA.release();
    await eventually(async () => (await queuesOf(a)).every((queue) => queue.length === 0), 2_000);
    const other = await processOn();
    const lockA = await other.acquire(a, 10_000, { retryCount: 0 });
    expect(lockA.attempts).toBe(1);
    await lockA.release();
    await leaveLine(b, '10500-earlier');
    await (await both).release();
  });
});

describe('the line under partitions (issue 27)', () => {
  const behindProxies: Array<{ redlock: Redlock; proxies: FaultProxy[] }> = [];
  afterEach(async () => {
    for (const { redlock, proxies } of behindProxies.splice(0)) {
      for (const proxy of proxies) proxy.mode = 'pass'; // the network heals: what it held back lands, in order
      await redlock.quit();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });

  /** A Redlock standing for one process that reaches each master through a proxy of its own, which a partition cuts. */
  async function processBehindProxies(settings: Parameters<typeof own.lockOn>[0]): Promise<{ redlock: Redlock; proxies: FaultProxy[] }> {
    const proxies = await Promise.all(own.ports.map((port) => FaultProxy.start(port)));
    const redlock = redlockOn(
      proxies.map((proxy) => proxy.port),
      settings,
    );
    behindProxies.push({ redlock, proxies });
    await warmUp(redlock, direct);
    return { redlock, proxies };
  }

  /** Nothing of `resource` on any master: no key, no ticket in its line. */
  async function leftNothing(resource: string): Promise<boolean> {
    return (await valuesOn(direct, resource)).every((value) => value === null) && (await queuesOf(resource)).every((queue) => queue.length === 0);
  }

  it('a waiter cut off from a majority of the masters holds the line no longer than its place lasts: the waiter behind it, which reaches a quorum, is served', async () => {
    const resource = uniquePrefix('cut-off')('r');
    // A place in line lasts 2 × (1000 + 0) + 100 = 2100 ms unless its waiter tries again. Where the
    // cut-off waiter is heard (masters 0 and 4) the resource is free and it is first, so it is
    // granted there, which does not renew its place; where it is not, nothing does: its place lapses
    // everywhere, and the next waiter tries again then.
    const settings = { retryCount: -1, retryDelay: 1_000, retryJitter: 0, nodeTimeout: 100 } as const;
    const holder = await processOn();
    const cutOff = await processBehindProxies(settings);
    const next = await processBehindProxies(settings);
    const held = await holder.acquire(resource, 60_000);
    const stop = new AbortController();
    const first = cutOff.redlock.acquire(resource, 10_000, { signal: stop.signal }).catch((error: unknown) => error);
    await eventually(async () => (await queuesOf(resource)).every((queue) => queue.length === 1));
    const second = next.redlock.acquire(resource, 10_000);
    await eventually(async () => (await queuesOf(resource)).every((queue) => queue.length === 2));
    // The first in line is cut from masters 1, 2 and 3 both ways (it reaches 0 and 4: never a
    // quorum); the second from master 2 (it reaches four). Then the holder lets go.
    for (const index of [1, 2, 3]) cutOff.proxies[index]!.mode = 'blackhole';
    next.proxies[2]!.mode = 'blackhole';
    await held.release();
    const lock = await Promise.race([second, sleep(6_000).then(() => undefined)]);
    expect(lock, 'the waiter that reaches a quorum is served while the one ahead of it is cut off').toBeDefined();
    // Believe the masters: it holds the lock on a quorum of them.
    expect((await valuesOn(direct, resource)).filter((value) => value === lock!.value).length).toBeGreaterThanOrEqual(3);
    await lock!.release();
    stop.abort();
    expect(await first).toBeInstanceOf(Error);
    for (const proxy of [...cutOff.proxies, ...next.proxies]) proxy.mode = 'pass';
    // Once the network heals, the cut-off waiter's held-back attempts and rollbacks land: nothing is left.
    await eventually(() => leftNothing(resource));
  });

  it('a waiter behind a place that is no longer renewed tries again when that place lapses, not a retry sleep later', async () => {
    const resource = uniquePrefix('lapse')('r');
    // A place in line lasts 2 × (2000 + 0) + 100 = 4100 ms unless its waiter tries again.
    const settings = { retryCount: -1, retryDelay: 2_000, retryJitter: 0, nodeTimeout: 100 } as const;
    const holder = await processOn();
    const gone = await processBehindProxies(settings);
    const next = await processOn(settings);
    const held = await holder.acquire(resource, 60_000);
    const stop = new AbortController();
    const first = gone.redlock.acquire(resource, 10_000, { signal: stop.signal }).catch((error: unknown) => error);
    await eventually(async () => (await queuesOf(resource)).every((queue) => queue.length === 1));
    // Its process is heard from no more: its attempts reach no master, so its place lapses.
    for (const proxy of gone.proxies) proxy.mode = 'blackhole';
    const [ticket] = (await queuesOf(resource))[0]!;
    const lapsesAt = -Number(await direct[0]!.zScore(resource + QUEUE_SUFFIX, '~' + ticket!));
    // The next waiter's attempts come every 2 s from just after that place was renewed: at +2 s and
    // +4 s it is still there; its next sleep would take it to +6 s, 1.9 s after the place lapsed.
    const second = next.acquire(resource, 10_000);
    await eventually(async () => (await queuesOf(resource)).every((queue) => queue.length === 2));
    await held.release();
    const lock = await second;
    const grantedAt = await masterNow(0);
    expect(grantedAt - lapsesAt, 'ms from the lapse of the place ahead to the grant, on master 0\'s clock').toBeLessThan(1_000);
    expect((await valuesOn(direct, resource)).filter((value) => value === lock.value).length).toBeGreaterThanOrEqual(3);
    await lock.release();
    stop.abort();
    expect(await first).toBeInstanceOf(Error);
    for (const proxy of gone.proxies) proxy.mode = 'pass';
    await eventually(() => leftNothing(resource));
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

  const ignored = <T extends Parameters<typeof oracle.ignore>[0]>(lock: T): T => {
    oracle.ignore(lock);
    return lock;
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
        // Ignored as each is acquired: the oracle would look for them without the prefix meanwhile.
        const pendingRead = reader.redlock.readWrite(name).read.acquire(10_000).then(ignored);
        const permit = await permits.redlock.semaphore(name + ':pool', 1).acquire(10_000);
        oracle.ignore(permit);
        const pendingPermit = permitWaiter.redlock.semaphore(name + ':pool', 1).acquire(10_000).then(ignored);
        await sleep(300); // both refused once, asleep for up to 5 s
        const releasedAt = performance.now();
        await Promise.all([written.release(), permit.release()]);
        const [read, next] = await Promise.all([pendingRead, pendingPermit]);
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
