/**
 * The waiting line when a master is wild or paused: places on the masters' clock come from an
 * agreeing majority of them (src/acquisition/master-clock.ts), and a waiter in line on fewer masters
 * than a majority is woken by the release all the same. Three masters of this file's own, with
 * clocks the lab can move (src/testing/clock.ts): one is set 60 s behind, one paused.
 */
import { describe, expect, it } from 'vitest';
import type { Lock } from '../../src/index.js';
import { clockShimProblem } from '../../src/testing/clock.js';
import { QUEUE_SUFFIX } from '../../src/script/codec.js';
import { eventually, sleep, uniquePrefix, useOwnMasters, valuesOn, type DirectClient } from '../harness/cluster.js';

const shimProblem = clockShimProblem();
if (shimProblem) console.log(`wild-clock test skipped: ${shimProblem}`);

const own = useOwnMasters(3, { movableClock: shimProblem === undefined });

/** A master's TIME minus ours, ms. */
async function clockOffsetMs(client: DirectClient): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Number(micros) / 1000 - Date.now();
}

/** The places (scores) of the tickets in `resource`'s queue on master `index`, first in line first (marks left out). */
async function placesOn(index: number, resource: string): Promise<number[]> {
  const line = await own.direct[index]!.zRangeByScoreWithScores(resource + QUEUE_SUFFIX, '(0', '+inf');
  return line.map((entry) => entry.score);
}

/** Until every master holds `lock` (the grants after the quorum are still on their way when acquire resolves). */
async function heldEverywhere(key: string, lock: Lock): Promise<void> {
  await eventually(async () => (await valuesOn(own.direct, key)).every((value) => value === lock.value));
}

describe('places in line with a wild master clock', () => {
  it.skipIf(shimProblem)('a process whose first reading missed a master, the other one 60 s behind, does not jump the line: who came first is served first', async () => {
    const healthy = own.masters[0]!;
    const wild = own.masters[2]!;
    wild.clock!.offset(-60_000);
    try {
      await eventually(async () => (await clockOffsetMs(own.direct[2]!)) < -59_000);
      const key = uniquePrefix('wild-clock')('r');
      const held = await own.lockOn().acquire(key, 30_000);
      await heldEverywhere(key, held);
      const order: string[] = [];
      // Tickets outlive the pause below (2 × retryDelay + nodeTimeout); a release wakes the one first in line.
      const waiterSettings = { retryDelay: 1_500, retryJitter: 0, retryCount: 20, nodeTimeout: 300 };
      const first = own.lockOn(waiterSettings).acquire(key, 5_000).then(async (lock) => {
        order.push('first');
        await lock.release();
      });
      // In line on every master at one shared place: its process read all three clocks (a reading
      // whose round trips a loaded machine stretched past the agreement is read again, at a later wait).
      await eventually(async () => {
        const places = await Promise.all([0, 1, 2].map((index) => placesOn(index, key)));
        return places.every((line) => line.length === 1) && new Set(places.map((line) => line[0])).size === 1;
      }, 20_000);
      // Its process' first three readings are done (one per wait): it reads no clock while the master is paused.
      await sleep(4_000);
      healthy.pause();
      const second = own.lockOn(waiterSettings).acquire(key, 5_000).then(async (lock) => {
        order.push('second');
        await lock.release();
      });
      // Awaited below; a failure before that must not surface as an unhandled rejection when the Redlocks quit.
      for (const waiting of [first, second]) waiting.catch(() => undefined);
      // Its attempt and its first reading of the clocks miss the paused master: two answers, one 60 s behind.
      await eventually(async () => (await placesOn(1, key)).length === 2, 10_000);
      await sleep(800);
      // Released while that master is still paused: the other two say who is first.
      await held.release();
      await sleep(600);
      healthy.resume();
      await Promise.all([first, second]);
      expect(order).toEqual(['first', 'second']);
    } finally {
      wild.clock!.reset();
    }
  });
});

describe('a waiter in line on fewer masters than a majority', () => {
  it('is woken by the release, not by its timer: one master lost the key (restarted), another is paused', async () => {
    const key = uniquePrefix('minority-line')('r');
    const held = await own.lockOn().acquire(key, 30_000);
    await heldEverywhere(key, held);
    // Master 0 restarts empty (no persistence): the key is free there. Master 2 stops answering.
    await own.masters[0]!.restart();
    await eventually(() => own.direct[0]!.isReady);
    own.masters[2]!.pause();
    // A long timer: only a release's announcement can wake it soon.
    const waiter = own.lockOn({ retryDelay: 15_000, retryJitter: 0, retryCount: 2, nodeTimeout: 300 });
    const acquiring = waiter.acquire(key, 5_000);
    acquiring.catch(() => undefined); // awaited below
    // Granted on master 0 (rolled back), refused on master 1 (in line there, alone), no answer from master 2.
    await eventually(async () => (await placesOn(1, key)).length === 1, 10_000);
    await sleep(500); // its rollback and its sleep
    const releasedAtMs = performance.now();
    await held.release().catch(() => undefined); // master 2 cannot confirm it
    const lock = await acquiring;
    expect(performance.now() - releasedAtMs).toBeLessThan(5_000);
    await lock.release().catch(() => undefined);
  });
});
