/**
 * The hot key's hand-off on real masters (issue 40; docs/design/performance.md, "The hot key:
 * hand-off"): a release hands the key to the head of the line, which holds without an attempt of its
 * own, valid from its latest attempt's start until the sooner of the lock's ttl and its ticket's
 * (a master sets a handed key no longer than the head's place lasts), then claims the whole ttl.
 * What the masters hold is checked, not what the library says.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_SUFFIX, decodeBatch, encodeBatch, lockScript, type LockOperation } from '../../src/script/codec.js';
import type { OperationReply } from '../../src/script/replies.js';
import { eventually, sleep, uniquePrefix, useOwnMasters, valuesOn, warmUp, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(3);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

/** A place in line lasts 2 × (retryDelay + retryJitter) + nodeTimeout: here 2 × 5000 + 100 ms. */
const LONG_SLEEPS = { retryCount: -1, retryDelay: 5_000, retryJitter: 0, nodeTimeout: 100 } as const;

/** Every master's PTTL of `key`. */
function pttlsOf(key: string): Promise<number[]> {
  return Promise.all(direct.map((client) => client.pTTL(key)));
}

/** The tickets in `key`'s line on every master. */
function queuesOf(key: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(key + QUEUE_SUFFIX, '(0', '+inf')));
}

describe('the hand-off', () => {
  it('a release hands the key to the first in line: it holds with no attempt after the release, on every master', async () => {
    const key = uniquePrefix('handed')('r');
    const holder = own.lockOn();
    const waiter = own.lockOn(LONG_SLEEPS);
    await Promise.all([warmUp(holder, direct), warmUp(waiter, direct)]);
    const held = await holder.acquire(key, 30_000);
    const answers = (): number => waiter.stats().masters.reduce((sum, master) => sum + master.granted + master.refused + master.timeout + master.error, 0);
    const waiting = waiter.acquire(key, 5_000);
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 1));
    // Its subscriptions took, and the attempt that follows was refused: it sleeps its 5 s.
    await sleep(300);
    const before = answers();
    const releasedAt = performance.now();
    await held.release();
    const lock = await waiting;
    // Woken and served by the release alone: well before its 5 s sleep, with no command of its own since.
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    expect(waiter.stats().acquisitions.handed).toBe(1);
    expect(answers()).toBe(before);
    // Believe the masters: each holds its value, set by the release, and it left every line.
    expect(await valuesOn(direct, key)).toEqual([lock.value, lock.value, lock.value]);
    expect(await queuesOf(key)).toEqual([[], [], []]);
    await lock.release();
    await eventually(async () => (await valuesOn(direct, key)).every((value) => value === null));
  });

  it("a handed key lives no longer than the head's place (its ticket's ttl); the lock claims its whole ttl before that runs out", async () => {
    const key = uniquePrefix('claim')('r');
    const holder = own.lockOn();
    const waiter = own.lockOn(LONG_SLEEPS);
    await Promise.all([warmUp(holder, direct), warmUp(waiter, direct)]);
    // Its ticket's ttl, 10.1 s, is well below the lock's 60 s.
    const held = await holder.acquire(key, 30_000);
    const waiting = waiter.acquire(key, 60_000);
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 1));
    await sleep(300);
    await held.release();
    const lock = await waiting;
    expect(waiter.stats().acquisitions.handed).toBe(1);
    // Valid until its attempt's start + 10.1 s at most, and so set on the masters.
    expect(lock.expiration - Date.now()).toBeLessThanOrEqual(10_100);
    expect(Math.max(...(await pttlsOf(key)))).toBeLessThanOrEqual(10_100);
    // Then claimed, about halfway: the masters keep it for the lock's ttl, and its expiration says so.
    await eventually(async () => (await pttlsOf(key)).every((pttl) => pttl > 30_000), 8_000);
    await eventually(() => lock.expiration - Date.now() > 30_000, 1_000);
    expect(await valuesOn(direct, key)).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();
  });

  it('a waiter that gives up takes a key handed to it with its ticket: nothing is left on the masters', async () => {
    const key = uniquePrefix('gave-up')('r');
    const holder = own.lockOn();
    const waiter = own.lockOn(LONG_SLEEPS);
    await Promise.all([warmUp(holder, direct), warmUp(waiter, direct)]);
    const held = await holder.acquire(key, 30_000);
    const controller = new AbortController();
    const waiting = waiter.acquire(key, 5_000, { signal: controller.signal }).catch((error: unknown) => error);
    await eventually(async () => (await queuesOf(key)).every((queue) => queue.length === 1));
    const [ticket] = (await queuesOf(key))[0]!;
    const handOffValue = key + QUEUE_SUFFIX + ':' + ticket!;
    // Masters 1 and 2 are taken by someone outside any line: only master 0's release hands the key,
    // a minority, so the waiter does not hold.
    await Promise.all([1, 2].map((index) => direct[index]!.set(key, 'someone-else')));
    await held.release().catch(() => undefined);
    await eventually(async () => {
      const value = await direct[0]!.get(key);
      return value !== null && value === (await direct[0]!.get(handOffValue));
    });
    controller.abort(new Error('gave up'));
    expect(await waiting).toBeInstanceOf(Error);
    // Believe the masters: the handed key, the ticket and its hand-off value are gone.
    await eventually(async () => (await direct[0]!.get(key)) === null);
    expect(await Promise.all(direct.map((client) => client.exists([key + QUEUE_SUFFIX, handOffValue])))).toEqual([0, 0, 0]);
    await Promise.all([1, 2].map((index) => direct[index]!.del(key)));
  });

  describe("on one master: a handed or kept key lives at least as long as its waiter counts it (its attempt's start + the sooner of the ttl and the ticket's)", () => {
    /** One operation through the batch script on master 0, decoded. */
    async function send(operation: LockOperation): Promise<OperationReply | undefined> {
      const command = encodeBatch([operation], 'tag', undefined, undefined, false, ['EVALSHA', lockScript.sha]);
      return decodeBatch(await direct[0]!.sendCommand(command), [operation], 'tag')?.[0];
    }
    /** Master 0's TIME in ms. */
    async function masterNow(): Promise<number> {
      const [seconds, micros] = await direct[0]!.sendCommand<[string, string]>(['TIME']);
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    }
    /** `ticket` in `key`'s line on master 0, placed at 1, its place lapsing `lapsesInMs` from now (its last refusal was long ago). */
    async function inLine(key: string, ticket: string, lapsesInMs: number): Promise<void> {
      await direct[0]!.zAdd(key + QUEUE_SUFFIX, [
        { score: 1, value: ticket },
        { score: -((await masterNow()) + lapsesInMs), value: '~' + ticket },
      ]);
    }

    it("the rollback's kept grant: a ticket's ttl from the rollback, not the place's older deadline", async () => {
      const key = uniquePrefix('kept-life')('r');
      const ticket = '2000-kept';
      await inLine(key, ticket, 200);
      // The attempt began just now and was granted here: the waiter will count this key until about now + 2 s.
      await direct[0]!.set(key, 'v1', { PX: 10_000 });
      const reply = await send({ kind: 'release', keys: [key], value: 'v1', ticket, keep: true, ttlMs: 10_000, ageMs: 0, placeMs: 1 });
      expect(reply).toEqual({ status: 0, detail: 0, head: `${ticket}=v1` });
      expect(await direct[0]!.pTTL(key)).toBeGreaterThan(1_800);
      expect(await direct[0]!.get(key + QUEUE_SUFFIX + ':' + ticket)).toBe('v1');
      await direct[0]!.del([key, key + QUEUE_SUFFIX, key + QUEUE_SUFFIX + ':' + ticket]);
    });

    it("a hand-off: as long as the hand-off value (set after its attempt began), not the place's older deadline", async () => {
      const key = uniquePrefix('handed-life')('r');
      const ticket = '2000-handed';
      await inLine(key, ticket, 200);
      // Its latest attempt's value, left by that attempt's rollback just now (which renews no place).
      await direct[0]!.set(key + QUEUE_SUFFIX + ':' + ticket, 'v2', { PX: 2_000 });
      await direct[0]!.set(key, 'holder', { PX: 10_000 });
      const reply = await send({ kind: 'release', keys: [key], value: 'holder', ticket: '' });
      expect(reply).toEqual({ status: 1, detail: 0, head: `${ticket}=v2` });
      expect(await direct[0]!.get(key)).toBe('v2');
      expect(await direct[0]!.pTTL(key)).toBeGreaterThan(1_800);
      await direct[0]!.del([key, key + QUEUE_SUFFIX, key + QUEUE_SUFFIX + ':' + ticket]);
    });
  });
});
