/**
 * The quorum semaphore on five real masters: at most `limit` valid permits, each a Redlock on one of
 * `limit` slots. Checked on the masters (each slot key's holder and PTTL), and by the safety oracle,
 * which counts valid permits per semaphore at every grant.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, RedlockClosedError, ResourceLockedError, type Lock } from '../../src/index.js';
import { PERMIT_INFIX } from '../../src/primitives/semaphore.js';
import { QUEUE_SUFFIX } from '../../src/script/codec.js';
import { eventually, heldByQuorum, sleep, uniquePrefix, useOwnMasters, valuesOn, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);
let direct: DirectClient[];
beforeAll(() => ({ direct } = own));

const slotKey = (name: string, slot: number): string => name + PERMIT_INFIX + slot;

/** Per slot: the value each master holds there. */
async function slotsOn(name: string, limit: number): Promise<(string | null)[][]> {
  return Promise.all(Array.from({ length: limit }, (_, slot) => valuesOn(direct, slotKey(name, slot))));
}

/** Every slot key of `name` on every master, and every slot's queue (a waiting permit's marks): none may be left. */
async function keysLeft(name: string, limit: number): Promise<number> {
  const keys = Array.from({ length: limit }, (_, slot) => [slotKey(name, slot), slotKey(name, slot) + QUEUE_SUFFIX]).flat();
  const counts = await Promise.all(direct.map((client) => client.exists(keys)));
  return counts.reduce((a, b) => a + b, 0);
}


const held: Lock[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((lock) => lock.release().catch(() => undefined)));
});

describe('semaphore', () => {
  it('grants limit permits, each holding its own slot on every master, and refuses one more', async () => {
    const name = uniquePrefix('sem')('pool');
    const semaphore = own.lockOn().semaphore(name, 3);
    for (let i = 0; i < 3; i++) held.push(await semaphore.acquire(5_000));
    const slots = held.map((permit) => (permit.lease.type === 'permit' ? permit.lease.slot : -1));
    expect(new Set(slots)).toEqual(new Set([0, 1, 2]));
    // Each permit holds its slot on a quorum (on every master, unless a master saw the acquires in
    // another order and gave them other slots, which the permits then drop there).
    for (const permit of held) expect(permit.resources).toEqual([slotKey(name, (permit.lease as { slot: number }).slot)]);
    await eventually(async () => {
      const onMasters = await slotsOn(name, 3);
      return held.every((permit) =>
        onMasters.every((values, slot) => {
          const holding = values.filter((value) => value === permit.value).length;
          return slot === (permit.lease as { slot: number }).slot ? holding >= 3 : holding === 0;
        }),
      );
    });
    const pttls = await Promise.all(direct.map((client) => client.pTTL(slotKey(name, 0))));
    for (const pttl of pttls) expect(pttl).toBeGreaterThan(2_000);
    const refused = await semaphore.acquire(5_000, { retryCount: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ResourceLockedError);
    expect((refused as Error).message).toContain(`a permit of semaphore "${name}" (limit 3)`);
  });

  it('limit 1 is a mutex: a second permit waits for the first to be released', async () => {
    const name = uniquePrefix('sem-one')('pool');
    const semaphore = own.lockOn({ retryDelay: 5_000, retryJitter: 0 }).semaphore(name, 1);
    const first = await semaphore.acquire(10_000);
    const second = semaphore.acquire(10_000);
    await sleep(150);
    await heldByQuorum(direct, slotKey(name, 0), first.value);
    const releasedAt = performance.now();
    await first.release();
    const next = await second;
    held.push(next);
    // Woken by the release announcement, not by its 5 s retryDelay.
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
    await heldByQuorum(direct, slotKey(name, 0), next.value);
  });

  it('a waiter in another Redlock (process) is woken by a release, long before its retryDelay', async () => {
    const name = uniquePrefix('sem-wake')('pool');
    const holder = own.lockOn().semaphore(name, 2);
    const waiting = own.lockOn({ retryDelay: 5_000, retryJitter: 0 }).semaphore(name, 2);
    const a = await holder.acquire(10_000);
    held.push(await holder.acquire(10_000));
    const pending = waiting.acquire(10_000);
    await sleep(200);
    const releasedAt = performance.now();
    await a.release();
    const permit = await pending;
    held.push(permit);
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
    expect(permit.lease).toMatchObject({ type: 'permit', slot: (a.lease as { slot: number }).slot });
  });

  it('an expired permit frees its slot on the masters\' own clock, without anyone releasing it', async () => {
    const name = uniquePrefix('sem-expire')('pool');
    const semaphore = own.lockOn().semaphore(name, 1);
    const first = await semaphore.acquire(300);
    expect(await semaphore.acquire(5_000, { retryCount: 0 }).catch((error: unknown) => error)).toBeInstanceOf(ResourceLockedError);
    await eventually(async () => (await keysLeft(name, 1)) === 0, 2_000);
    const next = await semaphore.acquire(5_000, { retryCount: 0 });
    held.push(next);
    expect(next.value).not.toBe(first.value);
  });

  it('sixteen workers on limit 4: never more than four hold a permit at once, and every worker gets its turns', async () => {
    const name = uniquePrefix('sem-busy')('pool');
    const semaphores = [own.lockOn(), own.lockOn()].map((redlock) => redlock.semaphore(name, 4));
    let holding = 0;
    let most = 0;
    const turns = new Array<number>(16).fill(0);
    const deadline = Date.now() + 2_000;
    await Promise.all(
      turns.map(async (_, worker) => {
        while (Date.now() < deadline) {
          await semaphores[worker % 2]!.using(2_000, { retryCount: -1, signal: AbortSignal.timeout(10_000) }, async () => {
            holding++;
            most = Math.max(most, holding);
            await sleep(5);
            holding--;
          });
          turns[worker]!++;
        }
      }),
    );
    expect(most).toBeLessThanOrEqual(4);
    expect(most).toBeGreaterThan(1); // a semaphore, not a mutex (all four at once is usual, not certain on a loaded machine)
    for (const count of turns) expect(count).toBeGreaterThan(0);
    await eventually(async () => (await keysLeft(name, 4)) === 0, 2_000);
  });

  it('sixteen workers on limit 2 with default retry settings: no acquisition gives up (a retry woken by a release costs none of the retry budget)', async () => {
    const name = uniquePrefix('sem-defaults')('pool');
    const semaphores = [own.lockOn(), own.lockOn()].map((redlock) => redlock.semaphore(name, 2));
    let gaveUp = 0;
    let acquired = 0;
    const deadline = Date.now() + 3_000;
    await Promise.all(
      Array.from({ length: 16 }, async (_, worker) => {
        while (Date.now() < deadline) {
          try {
            await semaphores[worker % 2]!.using(10_000, () => sleep(1));
            acquired++;
          } catch (error) {
            if (!(error instanceof ExecutionError)) throw error;
            gaveUp++;
          }
        }
      }),
    );
    expect(acquired).toBeGreaterThan(100);
    expect(gaveUp).toBe(0);
  });

  it('a permit lives as a lock does: extended automatically past its ttl, and its slot is free once released', async () => {
    const name = uniquePrefix('sem-using')('pool');
    const semaphore = own.lockOn().semaphore(name, 2);
    const result = await semaphore.using(2_000, async (signal, permit) => {
      await sleep(3_000);
      expect(signal.aborted).toBe(false);
      const pttls = await Promise.all(direct.map((client) => client.pTTL(permit.resources[0]!)));
      expect(pttls.filter((pttl) => pttl > 0).length).toBeGreaterThanOrEqual(3);
      return 'done';
    });
    expect(result).toBe('done');
    await eventually(async () => (await keysLeft(name, 2)) === 0, 2_000);
  });

  it('two of five masters paused: permits are still granted; three paused: the acquire fails and leaves no slot behind', async () => {
    const name = uniquePrefix('sem-paused')('pool');
    const semaphore = own.lockOn({ retryCount: 1, retryDelay: 50, nodeTimeout: 200 }).semaphore(name, 2);
    own.masters[3]!.pause();
    own.masters[4]!.pause();
    const permit = await semaphore.acquire(5_000);
    const onRunning = await valuesOn(direct.slice(0, 3), permit.resources[0]!);
    expect(onRunning).toEqual([permit.value, permit.value, permit.value]);
    await permit.release();
    own.masters[2]!.pause();
    const failure = await semaphore.acquire(5_000).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ExecutionError);
    for (const master of own.masters) master.resume();
    await sleep(300); // what the paused masters had queued runs now, and the rollback after it
    await eventually(async () => (await keysLeft(name, 2)) === 0, 3_000);
  });

  it('two of five masters killed: permits are still granted and released on the other three', async () => {
    const name = uniquePrefix('sem-killed')('pool');
    const semaphore = own.lockOn({ nodeTimeout: 200 }).semaphore(name, 2);
    await Promise.all([own.masters[0]!.kill(), own.masters[1]!.kill()]);
    const permits = [await semaphore.acquire(5_000), await semaphore.acquire(5_000)];
    for (const permit of permits) expect(await valuesOn(direct.slice(2), permit.resources[0]!)).toEqual([permit.value, permit.value, permit.value]);
    // Refused on a running master with two down: a quorum is impossible at once (ExecutionError).
    expect(await semaphore.acquire(5_000, { retryCount: 0 }).catch((error: unknown) => error)).toBeInstanceOf(ExecutionError);
    await Promise.all(permits.map((permit) => permit.release()));
    const left = await Promise.all(direct.slice(2).map((client) => client.exists([slotKey(name, 0), slotKey(name, 1)])));
    expect(left).toEqual([0, 0, 0]);
  });

  it('an aborted wait rejects with the signal\'s reason and leaves no slot and no mark on any master', async () => {
    const name = uniquePrefix('sem-abort')('pool');
    const redlock = own.lockOn();
    const semaphore = redlock.semaphore(name, 1);
    const first = await semaphore.acquire(10_000);
    held.push(first);
    const controller = new AbortController();
    const pending = semaphore.acquire(10_000, { retryCount: -1, signal: controller.signal }).catch((error: unknown) => error);
    // Refused: its mark is on the slot's queue (so the slot's release is announced).
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(slotKey(name, 0) + QUEUE_SUFFIX)))).filter(Boolean).length >= 3);
    controller.abort(new Error('gave up'));
    expect(await pending).toMatchObject({ message: 'gave up' });
    await heldByQuorum(direct, slotKey(name, 0), first.value);
    const all = await Promise.all(direct.map((client) => client.keys(`${name}*`)));
    for (const keys of all) expect(keys).toEqual([slotKey(name, 0)]);
  });

  it('quit() ends a waiting permit acquire with RedlockClosedError', async () => {
    const name = uniquePrefix('sem-quit')('pool');
    held.push(await own.lockOn().semaphore(name, 1).acquire(10_000));
    const redlock = own.lockOn({ retryCount: -1 });
    const pending = redlock.semaphore(name, 1).acquire(10_000).catch((error: unknown) => error);
    await sleep(100);
    await redlock.quit();
    expect(await pending).toBeInstanceOf(RedlockClosedError);
  });

  it('masters that disagree on which slot is free (a permit held on a minority) still converge on one slot', async () => {
    const name = uniquePrefix('sem-split')('pool');
    // Slot 0 held on masters 3 and 4 only, as a permit granted by a quorum that then lost those
    // masters would leave it: masters 0-2 give slot 0, masters 3-4 give slot 1.
    await Promise.all([3, 4].map((index) => direct[index]!.set(slotKey(name, 0), 'stray', { PX: 5_000 })));
    const semaphore = own.lockOn({ retryDelay: 20 }).semaphore(name, 2);
    const permit = await semaphore.acquire(5_000);
    held.push(permit);
    expect(permit.lease).toMatchObject({ slot: 0 });
    // A second permit: slot 0 is taken everywhere now, slot 1 on masters 0-2 — after one split
    // attempt it starts at slot 1 and gets it on all of them... except 3-4, whose slot 1 is free too.
    const second = await semaphore.acquire(5_000);
    held.push(second);
    expect(second.lease).toMatchObject({ slot: 1 });
    await sleep(50);
    // The minority grants of other slots were dropped: no master holds a permit's value in a slot not its own.
    const slots = await slotsOn(name, 2);
    expect(slots[0]).toEqual([permit.value, permit.value, permit.value, 'stray', 'stray']);
    expect(slots[1]!.filter((value) => value === second.value).length).toBeGreaterThanOrEqual(3);
    expect(slots[1]).not.toContain(permit.value);
  });

  it('bad input fails at once with a typed error, before any network call', async () => {
    const redlock = own.lockOn();
    expect(() => redlock.semaphore('pool', 0)).toThrow(RangeError);
    expect(() => redlock.semaphore('pool', 1.5)).toThrow(RangeError);
    expect(() => redlock.semaphore('pool', Number.NaN)).toThrow(RangeError);
    expect(() => redlock.semaphore('pool', '2' as unknown as number)).toThrow(TypeError); // a wrong type (bad-arguments.test.ts has the rest)
    expect(() => redlock.semaphore(['p', 'q'] as unknown as string, 2)).toThrow(TypeError); // a name is one string
    expect(() => redlock.semaphore('', 2)).toThrow(RangeError);
    expect(() => redlock.semaphore(7 as unknown as string, 2)).toThrow(TypeError);
    await expect(redlock.semaphore('pool', 2).acquire(-1)).rejects.toThrow(RangeError);
    // @ts-expect-error fencing is typed for exclusive holds only; JavaScript callers get the TypeError
    await expect(redlock.semaphore('pool', 2).acquire(1_000, { fencing: true })).rejects.toThrow(TypeError);
    expect(() => redlock.semaphore('pool', 2).using(1_000, undefined as never)).toThrow(TypeError);
  });
});
