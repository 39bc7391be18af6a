/**
 * The fair semaphore on five real masters: permits wait in the semaphore's line (one queue on each
 * master, its slot 0's, which every slot shares), a released slot goes to the head of it, in whichever process it waits, and the
 * limit is what the masters hold. The safety oracle counts valid permits at every grant.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Lock, Redlock } from '../../src/index.js';
import { PERMIT_INFIX } from '../../src/primitives/semaphore.js';
import { QUEUE_SUFFIX } from '../../src/script/codec.js';
import { collectOutput, exitWithin, spawnScript } from '../harness/processes.js';
import { eventually, sleep, uniquePrefix, urlOf, useOwnMasters, valuesOn, warmUp, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

const slotKey = (name: string, slot: number): string => name + PERMIT_INFIX + slot;
const lineOf = (name: string): string => slotKey(name, 0) + QUEUE_SUFFIX;
const FAIR = { fair: true };

/** A Redlock standing for one process, its connections to every master ready. */
async function processOn(settings?: Parameters<typeof own.lockOn>[0]): Promise<Redlock> {
  const redlock = own.lockOn(settings);
  await warmUp(redlock, direct);
  return redlock;
}

/** The tickets in the semaphore's line on every master, first in line first. */
function linesOf(name: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(lineOf(name), '(0', '+inf')));
}

/** Until `count` tickets stand in the semaphore's line on a quorum of masters. */
function inLine(name: string, count: number): Promise<void> {
  return eventually(async () => (await linesOf(name)).filter((line) => line.length === count).length >= 3, 5_000);
}

/** Holders of the semaphore's permits as the masters say: the values a quorum holds in some slot. */
async function holdersOnMasters(name: string, limit: number): Promise<string[]> {
  const holders: string[] = [];
  for (let slot = 0; slot < limit; slot++) {
    const counts = new Map<string, number>();
    for (const value of await valuesOn(direct, slotKey(name, slot))) if (value) counts.set(value, (counts.get(value) ?? 0) + 1);
    for (const [value, count] of counts) if (count >= 3) holders.push(value);
  }
  return holders;
}

/** Every key of the semaphore on every master: its slots, their queues. */
async function keysOf(name: string): Promise<string[][]> {
  return Promise.all(direct.map(async (client) => (await client.keys(`${name}*`)).sort()));
}

const held: Lock[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((lock) => lock.release().catch(() => undefined)));
});

describe('the fair semaphore', () => {
  it('waiters in three processes are served in the order they came, each released slot going to the head of the line', async () => {
    const name = uniquePrefix('fair-order')('pool');
    // A long retryDelay: a waiter wakes when the masters name it first in line, not by polling.
    const settings = { retryCount: -1, retryDelay: 3_000, retryJitter: 0 };
    const processes = await Promise.all([processOn(settings), processOn(settings), processOn(settings)]);
    const holders = await Promise.all([0, 1].map(() => processes[0].semaphore(name, 2, FAIR).acquire(20_000)));
    const order: number[] = [];
    const waiters: Promise<Lock>[] = [];
    const startedAt: number[] = [];
    for (let waiter = 0; waiter < 6; waiter++) {
      // Waiter i in process i mod 3: the line crosses processes, each process's waiters far apart in it.
      startedAt.push(performance.now());
      waiters.push(
        processes[waiter % 3]!.semaphore(name, 2, FAIR).acquire(20_000).then((permit) => {
          order.push(waiter);
          return permit;
        }),
      );
      await inLine(name, waiter + 1);
    }
    // The line as the masters hold it: each ticket's place, on every master.
    const places = await Promise.all(direct.map(async (client) => new Map((await client.zRangeWithScores(lineOf(name), '(0', '+inf', { BY: 'SCORE' })).map(({ value, score }) => [value, score]))));
    // One release at a time: the slot it frees goes to the head of the line, the next waiter in order.
    let holding = [...holders];
    for (let served = 0; served < 6; served++) {
      await holding.shift()!.release();
      await eventually(() => order.length === served + 1, 5_000).catch(async (error: unknown) => {
        const scores = await Promise.all(direct.map((client) => client.zRangeWithScores(lineOf(name), 0, -1)));
        const now = await direct[0]!.sendCommand(['TIME']);
        throw new Error(`served ${JSON.stringify(order)}; now ${JSON.stringify(now)} scores ${JSON.stringify(scores)}; slots ${JSON.stringify(await Promise.all([0, 1].map((slot) => valuesOn(direct, slotKey(name, slot)))))}`, { cause: error });
      });
      const permit = await waiters[order[served]!]!;
      holding.push(permit);
      expect(await holdersOnMasters(name, 2)).toHaveLength(2);
    }
    // Each released slot went to the head of the line: served in the order of their places, on a
    // majority of the masters (a grant needs a quorum, and each master grants only its head).
    const tickets = await Promise.all(waiters.map(async (waiter) => (await waiter).ticket));
    const inPlaceOrder = places.filter((place) => order.every((waiter, i) => i === 0 || place.get(tickets[order[i - 1]!]!)! <= place.get(tickets[waiter]!)!));
    expect(inPlaceOrder.length).toBeGreaterThanOrEqual(3);
    // And they came in that order: a place is when its acquire began on the masters' clocks, so two
    // acquires begun further apart than the processes' readings of those clocks can be off (a few
    // ms on loopback) come out in that order; two closer may come out either way (docs/api.md).
    for (let i = 1; i < 6; i++) if (startedAt[order[i]!]! - startedAt[order[i - 1]!]! < -50) expect.fail(`waiter ${order[i]} (begun ${(startedAt[order[i - 1]!]! - startedAt[order[i]!]!).toFixed(0)} ms before waiter ${order[i - 1]}) served after it: ${JSON.stringify(order)}`);
    await Promise.all(holding.map((permit) => permit.release()));
    holding = [];
    await eventually(async () => (await keysOf(name)).every((keys) => keys.length === 0), 3_000);
  });

  it('a refused permit stands in the semaphore\'s one line (its slot 0\'s queue), and the release of any slot wakes its head (issue 40)', async () => {
    const name = uniquePrefix('fair-one-queue')('pool');
    const settings = { retryCount: -1, retryDelay: 5_000, retryJitter: 0 };
    const [holding, waiting] = await Promise.all([processOn(settings), processOn(settings)]);
    const permits = await Promise.all([0, 1, 2].map(() => holding.semaphore(name, 3, FAIR).acquire(20_000)));
    const pending = waiting.semaphore(name, 3, FAIR).acquire(20_000);
    await inLine(name, 1);
    // The masters' truth: one queue, slot 0's; no other slot has one.
    for (const keys of await keysOf(name)) expect(keys.filter((key) => key.endsWith(QUEUE_SUFFIX))).toEqual([lineOf(name)]);
    // The last slot's release names the head: it wakes at once, not at its 5 s retryDelay.
    const last = permits.find((permit) => permit.lease.type === 'permit' && permit.lease.slot !== 0)!;
    const releasedAt = performance.now();
    await last.release();
    const permit = await pending;
    held.push(permit, ...permits.filter((other) => other !== last));
    expect(performance.now() - releasedAt).toBeLessThan(3_000);
    expect(await holdersOnMasters(name, 3)).toContain(permit.value);
  });

  it('a slot freed while the line is long goes to its head, not to a newcomer that asks at that moment', async () => {
    const name = uniquePrefix('fair-newcomer')('pool');
    const settings = { retryCount: -1, retryDelay: 3_000, retryJitter: 0 };
    const [holderProcess, waitingProcess, newcomerProcess] = await Promise.all([processOn(settings), processOn(settings), processOn({ retryCount: 0 })]);
    const holder = await holderProcess.semaphore(name, 1, FAIR).acquire(20_000);
    const waiting = waitingProcess.semaphore(name, 1, FAIR).acquire(20_000);
    await inLine(name, 1);
    await holder.release();
    // The newcomer asks once, as the slot is freed: the waiter ahead of it is owed the slot.
    const newcomer = await newcomerProcess.semaphore(name, 1, FAIR).acquire(20_000).catch((error: unknown) => error);
    const permit = await waiting;
    held.push(permit);
    expect(newcomer).toBeInstanceOf(Error);
    expect(await holdersOnMasters(name, 1)).toEqual([permit.value]);
  });

  it('sixteen workers in two processes on limit 4: never more than four holders on the masters, and the waits stay short and even', async () => {
    const name = uniquePrefix('fair-busy')('pool');
    const semaphores = [await processOn(), await processOn()].map((redlock) => redlock.semaphore(name, 4, FAIR));
    let holding = 0;
    let most = 0;
    let mostOnMasters = 0;
    const turns = new Array<number>(16).fill(0);
    const deadline = Date.now() + 3_000;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        mostOnMasters = Math.max(mostOnMasters, (await holdersOnMasters(name, 4)).length);
        await sleep(10);
      }
    })();
    await Promise.all(
      turns.map(async (_, worker) => {
        while (Date.now() < deadline) {
          await semaphores[worker % 2]!.using(2_000, { retryCount: -1, signal: AbortSignal.timeout(15_000) }, async () => {
            holding++;
            most = Math.max(most, holding);
            await sleep(5);
            holding--;
          });
          turns[worker]!++;
        }
      }),
    );
    sampling = false;
    await sampler;
    expect(most).toBeLessThanOrEqual(4);
    expect(mostOnMasters).toBeLessThanOrEqual(4);
    // Served in turn: every worker gets a share near the others' (Jain's index over the workers).
    const sum = turns.reduce((a, b) => a + b, 0);
    const jain = (sum * sum) / (turns.length * turns.reduce((a, b) => a + b * b, 0));
    expect(jain, `turns per worker: ${turns.join(', ')}`).toBeGreaterThan(0.9);
    await eventually(async () => (await keysOf(name)).every((keys) => keys.length === 0), 3_000);
  });

  it('a cancelled waiter leaves nothing on any master, and the one behind it is served next', async () => {
    const name = uniquePrefix('fair-cancel')('pool');
    const settings = { retryCount: -1, retryDelay: 3_000, retryJitter: 0 };
    const [holderProcess, cancelledProcess, nextProcess] = await Promise.all([processOn(settings), processOn(settings), processOn(settings)]);
    const holder = await holderProcess.semaphore(name, 1, FAIR).acquire(20_000);
    const controller = new AbortController();
    const cancelled = cancelledProcess.semaphore(name, 1, FAIR).acquire(20_000, { signal: controller.signal }).catch((error: unknown) => error);
    await inLine(name, 1);
    const next = nextProcess.semaphore(name, 1, FAIR).acquire(20_000);
    await inLine(name, 2);
    controller.abort(new Error('gave up'));
    expect(await cancelled).toMatchObject({ message: 'gave up' });
    await inLine(name, 1); // its ticket left the line on the masters at once, not when it lapses
    await holder.release();
    const permit = await next;
    held.push(permit);
    await permit.release();
    held.pop();
    await eventually(async () => (await keysOf(name)).every((keys) => keys.length === 0), 3_000);
  });

  it('a waiter whose process is killed does not block the line: its place lapses and the next one is served', async () => {
    const name = uniquePrefix('fair-crash')('pool');
    const urls = own.ports.map(urlOf);
    const holderProcess = await processOn();
    const holder = await holderProcess.semaphore(name, 1, FAIR).acquire(20_000);
    // A real process waits for the permit, then dies (SIGKILL: no rollback, no leave).
    const doomed = spawnScript(`
      const { Redlock } = await import('./src/index.ts');
      const redlock = new Redlock(${JSON.stringify(urls)}, { retryCount: -1, retryDelay: 200, retryJitter: 0, nodeTimeout: 200 });
      console.log('waiting');
      await redlock.semaphore(${JSON.stringify(name)}, 1, { fair: true }).acquire(20_000);
      console.log('acquired');
    `);
    const output = collectOutput(doomed);
    const exited = exitWithin(doomed, 20_000);
    await eventually(() => output().includes('waiting'), 10_000);
    await inLine(name, 1);
    doomed.kill('SIGKILL');
    await exited;
    const next = (await processOn({ retryCount: -1, retryDelay: 200, retryJitter: 0 })).semaphore(name, 1, FAIR).acquire(20_000);
    await inLine(name, 2);
    await holder.release();
    const startedAt = performance.now();
    const permit = await next;
    held.push(permit);
    // The dead ticket (200 ms retry delay: a ticket ttl of 2 × 200 + 200 ms) lapsed; a generous bound.
    expect(performance.now() - startedAt).toBeLessThan(10_000);
    expect(output()).not.toContain('acquired');
    expect(await holdersOnMasters(name, 1)).toEqual([permit.value]);
  });

  it('the default, fair: false, is the racing semaphore: a refused permit marks the queues but takes no place in line', async () => {
    const name = uniquePrefix('racing')('pool');
    const redlock = await processOn({ retryCount: -1, retryDelay: 3_000, retryJitter: 0 });
    const semaphore = redlock.semaphore(name, 1);
    const holder = await semaphore.acquire(20_000);
    const waiting = semaphore.acquire(20_000);
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(lineOf(name))))).filter(Boolean).length >= 3);
    expect(await linesOf(name)).toEqual([[], [], [], [], []]);
    await holder.release();
    held.push(await waiting);
  });

  it('bad options fail at once with a TypeError, before any network call', () => {
    const redlock = own.lockOn();
    expect(redlock.semaphore('pool', 2).fair).toBe(false);
    expect(redlock.semaphore('pool', 2, { fair: true }).fair).toBe(true);
    expect(() => redlock.semaphore('pool', 2, { fair: 'yes' as unknown as boolean })).toThrow(new TypeError('fair must be a boolean, got the string "yes"'));
    expect(() => redlock.semaphore('pool', 2, { fiar: true } as never)).toThrow(TypeError);
    expect(() => redlock.semaphore('pool', 2, null as never)).toThrow(TypeError);
  });
});
