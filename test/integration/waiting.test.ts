/**
 * Waiting without polling: a release announcement (PUBLISH from the release script) or the
 * blocking key's PTTL wakes a waiter, long before its retryDelay. Own three masters, so the
 * subscriber count on them is this file's alone.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_SUFFIX, processChannel, releasedChannel } from '../../src/script/codec.js';
import { clientKind, seesDisconnects } from '../harness/clients.js';
import {
  eventually,
  monitor,
  sleep,
  uniquePrefix,
  useOwnMasters,
  type DirectClient,
} from '../harness/cluster.js';

const own = useOwnMasters(3);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));
const lockOn = own.lockOn;

/** Subscribers to the release channel (or `channel`) on each master. */
async function subscribers(channel = releasedChannel): Promise<number[]> {
  return Promise.all(
    direct.map(async (client) => {
      const reply = await client.sendCommand<[string, number]>(['PUBSUB', 'NUMSUB', channel]);
      return Number(reply[1]);
    }),
  );
}

describe('waiting', () => {
  it('a release nobody waits for publishes nothing; one a waiter stands in line for is announced', async () => {
    const redlock = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('quiet');
    await (await redlock.acquire(key('warm'), 1_000)).release();
    const taps = await Promise.all(own.ports.map((port) => monitor(port)));
    await (await redlock.acquire(key('alone'), 10_000)).release();
    const held = await redlock.acquire(key('wanted'), 10_000);
    const pending = redlock.acquire(key('wanted'), 10_000);
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(key('wanted') + QUEUE_SUFFIX)))).every(Boolean));
    await held.release();
    await (await pending).release();
    const published = (lines: string[], name: string): number => lines.filter((line) => /"publish"/i.test(line) && line.includes(`:${name}"`)).length;
    await eventually(() => taps.every((tap) => published(tap.lines, key('wanted')) >= 1));
    for (const tap of taps) tap.stop();
    for (const tap of taps) expect(published(tap.lines, key('alone'))).toBe(0);
  });

  it('a release that names a waiter first in line tells that waiter\'s process alone, on its own channel (issue 40)', async () => {
    const holder = lockOn();
    const waiting = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('own-channel')('r');
    const held = await holder.acquire(key, 10_000);
    const pending = waiting.acquire(key, 10_000);
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(key + QUEUE_SUFFIX)))).every(Boolean));
    // Its subscriptions took (GLIDE's subscriber takes the shared channel alone: see below).
    const ownChannel = clientKind !== 'glide';
    await eventually(async () => (await subscribers(ownChannel ? processChannel : releasedChannel)).every((count) => count >= 1));
    const taps = await Promise.all(own.ports.map((port) => monitor(port)));
    const releasedAt = performance.now();
    await held.release();
    const next = await pending;
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    await next.release();
    // Each PUBLISH for the key: its channel, and the first ticket in line its message names.
    const publishes = (lines: string[]): { channel: string; head: string }[] =>
      lines.flatMap((line) => {
        // "<who>:<head>:<key>": tickets and values have no ':', keys may.
        const found = /"publish" "([^"]+)" "([^":]*):([^":]*):([^"]+)"/i.exec(line);
        return found && found[4] === key ? [{ channel: found[1]!, head: found[3]! }] : [];
      });
    await eventually(() => taps.every((tap) => publishes(tap.lines).some(({ head }) => head === '')));
    for (const tap of taps) tap.stop();
    for (const tap of taps) {
      // The holder's release named the waiter (handed it the key): on its process' channel, heard
      // there. (A GLIDE process does not listen there: nobody heard it, so it went to every
      // process too.) The waiter's own release, with nobody in line, went to every process.
      expect(publishes(tap.lines).filter(({ head }) => head !== '').map(({ channel }) => channel)).toEqual(ownChannel ? [processChannel] : [processChannel, releasedChannel]);
      expect(publishes(tap.lines).filter(({ head }) => head === '').map(({ channel }) => channel)).toEqual([releasedChannel]);
    }
  });

  it('a waiter in another Redlock (process) wakes on the release announcement, not after retryDelay', async () => {
    const holder = lockOn();
    const waiting = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('announce');
    const held = await holder.acquire(key('r'), 10_000);
    const pending = waiting.acquire(key('r'), 10_000);
    await sleep(150); // the waiter tried, was refused, and sleeps (up to 5 s)
    const releasedAt = performance.now();
    await held.release();
    const next = await pending;
    expect(performance.now() - releasedAt).toBeLessThan(1_000); // not the 5 s retryDelay
    // Refused, then woken by the release; one more try in between if its subscriptions took after
    // that refusal (a release before then would have been missed).
    expect(next.attempts).toBeGreaterThanOrEqual(2);
    expect(next.attempts).toBeLessThanOrEqual(3);
    await next.release();
  });

  it('a waiter in the same Redlock wakes as soon as the release is decided', async () => {
    const redlock = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('local');
    const held = await redlock.acquire(key('r'), 10_000);
    const pending = redlock.acquire(key('r'), 10_000);
    await sleep(100);
    const releasedAt = performance.now();
    await held.release();
    const next = await pending;
    expect(performance.now() - releasedAt).toBeLessThan(1_000); // not the 5 s retryDelay
    await next.release();
  });

  it("a waiter wakes at the blocking key's PTTL when nobody releases it", async () => {
    const redlock = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('pttl');
    // From before the SETs: each key lives 300 ms from when its master ran the SET, which is after
    // this (timed after them, a slow SET under load ate into the 300 ms: 234 ms in a loaded CI).
    const start = performance.now();
    await Promise.all(direct.map((client) => client.set(key('r'), 'crashed-holder', { PX: 300 })));
    const lock = await redlock.acquire(key('r'), 10_000);
    const waited = performance.now() - start;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(1_000);
    await lock.release();
  });

  it.runIf(seesDisconnects)('subscriber connections exist only while someone waits', async () => {
    const redlock = lockOn({ retryDelay: 5_000, retryJitter: 0 });
    const key = uniquePrefix('lazy');
    expect(await subscribers()).toEqual([0, 0, 0]);
    const held = await redlock.acquire(key('r'), 10_000);
    expect(await subscribers()).toEqual([0, 0, 0]); // nobody waits yet
    const pending = redlock.acquire(key('r'), 10_000);
    await eventually(async () => (await subscribers()).every((count) => count === 1));
    await held.release();
    await (await pending).release();
    await eventually(async () => (await subscribers()).every((count) => count === 0), 3_000);
  });

  it('waiters in one process are served first come, first served', async () => {
    const redlock = lockOn({ retryDelay: 2_000, retryJitter: 0 });
    const key = uniquePrefix('fifo');
    const order: string[] = [];
    const held = await redlock.acquire(key('r'), 10_000);
    const worker = async (name: string): Promise<void> => {
      const lock = await redlock.acquire(key('r'), 10_000);
      order.push(name);
      await sleep(20);
      await lock.release();
    };
    const workers: Array<Promise<void>> = [];
    for (const name of ['first', 'second', 'third', 'fourth']) {
      workers.push(worker(name));
      await sleep(30); // each is refused and queued before the next arrives
    }
    await held.release();
    await Promise.all(workers);
    expect(order).toEqual(['first', 'second', 'third', 'fourth']);
  });
});
