import { describe, expect, it, vi } from 'vitest';
import { parseReleased } from '../../../src/script/codec.js';
import { Notifier, type Subscribe, type WakeSource } from '../../../src/acquisition/waiting.js';
import type { ReleaseListener } from '../../../src/voters/voter.js';

/** What each waiter's sleep resolved with, or 'asleep' if it still sleeps after this turn. */
async function outcomes(sleeps: ReadonlyArray<Promise<WakeSource>>): Promise<Array<WakeSource | 'asleep'>> {
  const asleep = new Promise<'asleep'>((resolve) => setImmediate(() => resolve('asleep')));
  return Promise.all(sleeps.map((sleep) => Promise.race([sleep, asleep])));
}

/** When a test's waiter began waiting: the number its ticket starts with (0 for none), standing for its monotonic start. */
const startOf = (ticket: string): number => Number.parseInt(ticket, 10) || 0;

/** A Notifier over `masters` fake masters, and the listener each master's subscription was given. */
function notifierOver(masters: number, votes?: (master: number) => boolean): { notifier: Notifier; listeners: ReleaseListener[] } {
  const listeners: ReleaseListener[] = [];
  const subscribe: Subscribe = (listener) => {
    listeners.push(listener);
    return { close: () => Promise.resolve() };
  };
  return { notifier: new Notifier(Array.from({ length: masters }, () => subscribe), votes), listeners };
}

describe('Notifier', () => {
  it('an announcement naming a ticket wakes that waiter only, once a majority of masters made it', async () => {
    const { notifier } = notifierOver(5);
    const waiters = ['t1', 't2', 't3'].map((ticket) => notifier.register(['k'], ticket, startOf(ticket)));
    const sleeps = waiters.map((waiter) => waiter.sleep(60_000));
    notifier.released('k', 'value-1', 't2', 0);
    notifier.released('k', 'value-1', 't2', 1);
    notifier.released('k', 'value-1', 't2', 1); // the same master again (its reply, then its announcement)
    expect(await outcomes(sleeps)).toEqual(['asleep', 'asleep', 'asleep']);
    notifier.released('k', 'value-1', 't2', 4);
    expect(await outcomes(sleeps)).toEqual(['asleep', 'turn', 'asleep']);
    for (const waiter of waiters) waiter.leave();
    await notifier.close();
  });

  it("an announcement naming another process' ticket wakes nobody here", async () => {
    const { notifier } = notifierOver(1);
    const waiter = notifier.register(['k'], 't1', startOf('t1'));
    const sleep = waiter.sleep(60_000);
    notifier.released('k', 'value-1', 'elsewhere', 0);
    expect(await outcomes([sleep])).toEqual(['asleep']);
    waiter.leave();
    await notifier.close();
  });

  it('an announcement naming nobody wakes the waiter with the oldest ticket of the key', async () => {
    const { notifier } = notifierOver(1);
    // Registered in another order than they began waiting: the masters' queues go by when each began.
    const waiters = ['200-1000-b', '100-1000-a'].map((ticket) => notifier.register(['k'], ticket, startOf(ticket)));
    const other = notifier.register(['other'], '50-1000-c', startOf('50-1000-c'));
    const sleeps = [...waiters, other].map((waiter) => waiter.sleep(60_000));
    notifier.released('k', 'value-1', undefined, 0);
    expect(await outcomes(sleeps)).toEqual(['asleep', 'released', 'asleep']);
    for (const waiter of [...waiters, other]) waiter.leave();
    await notifier.close();
  });

  it('named by a minority of masters and named by nobody on the rest (their queues empty), the oldest waiter wakes', async () => {
    const { notifier } = notifierOver(5);
    const waiter = notifier.register(['k'], '100-1000-a', startOf('100-1000-a'));
    const younger = notifier.register(['k'], '200-1000-b', startOf('200-1000-b'));
    const sleeps = [waiter.sleep(60_000), younger.sleep(60_000)];
    notifier.released('k', 'value-1', '100-1000-a', 0);
    notifier.released('k', 'value-1', '100-1000-a', 1);
    expect(await outcomes(sleeps)).toEqual(['asleep', 'asleep']);
    notifier.released('k', 'value-1', undefined, 4);
    expect(await outcomes(sleeps)).toEqual(['released', 'asleep']); // the last report says how
    waiter.leave();
    younger.leave();
    await notifier.close();
  });

  it('in line on fewer masters than a majority (the others granted it, or did not answer), it wakes once each of those named it', async () => {
    const { notifier } = notifierOver(5);
    const waiter = notifier.register(['k'], 't1', startOf('t1'));
    // Its latest attempt was refused by two masters: no release elsewhere names it.
    waiter.refusedBy = 2;
    const sleep = waiter.sleep(60_000);
    notifier.released('k', 'value-1', 't1', 3);
    expect(await outcomes([sleep])).toEqual(['asleep']);
    notifier.released('k', 'value-1', 't1', 1);
    expect(await outcomes([sleep])).toEqual(['turn']);
    // Refused by a majority or more: a majority, as before; refused by none: any master's word.
    waiter.refusedBy = 4;
    const again = waiter.sleep(60_000);
    for (const master of [0, 1]) notifier.released('k', 'value-2', 't1', master);
    expect(await outcomes([again])).toEqual(['asleep']);
    notifier.released('k', 'value-2', 't1', 2);
    expect(await outcomes([again])).toEqual(['turn']);
    waiter.refusedBy = 0;
    const third = waiter.sleep(60_000);
    notifier.released('k', 'value-3', 't1', 4);
    expect(await outcomes([third])).toEqual(['turn']);
    waiter.leave();
    await notifier.close();
  });

  it('every master announcing the same release wakes the waiter once; its own rollback wakes nobody', async () => {
    const { notifier } = notifierOver(3);
    const waiter = notifier.register(['k'], 't1', startOf('t1'));
    waiter.ownValue = 'own-attempt';
    for (const master of [0, 1, 2]) notifier.released('k', 'own-attempt', 't1', master);
    for (const master of [0, 1, 2]) notifier.released('k', 'value-1', 't1', master);
    expect(await outcomes([waiter.sleep(60_000)])).toEqual(['turn']);
    expect(await outcomes([waiter.sleep(60_000)])).toEqual(['asleep']);
    waiter.leave();
    await notifier.close();
  });
});

describe('Notifier, readers', () => {
  it('a release naming nobody wakes the oldest exclusive waiter and every reader of the key; one naming a writer wakes that writer only', async () => {
    const { notifier } = notifierOver(3);
    const writer = notifier.register(['k'], '1-0-w', startOf('1-0-w'));
    const readers = ['2-0-r1', '3-0-r2'].map((ticket) => notifier.register(['k'], ticket, startOf(ticket), true));
    const other = notifier.register(['k'], '4-0-x', startOf('4-0-x'));
    let sleeps = [writer, ...readers, other].map((waiter) => waiter.sleep(60_000));
    for (const master of [0, 1]) notifier.released('k', 'value-1', '1-0-w', master);
    expect(await outcomes(sleeps)).toEqual(['turn', 'asleep', 'asleep', 'asleep']);
    writer.leave();
    sleeps = [...readers, other].map((waiter) => waiter.sleep(60_000));
    for (const master of [0, 1]) notifier.released('k', 'value-2', undefined, master);
    // Readers share the free key; the oldest exclusive waiter (the writer still here) tries too.
    expect(await outcomes(sleeps)).toEqual(['released', 'released', 'released']);
    for (const waiter of [...readers, other]) waiter.leave();
    await notifier.close();
  });

  it('a release naming nobody counts for the oldest writer even when a reader here is older: masters that name the writer and masters with no line add up', async () => {
    const { notifier } = notifierOver(5);
    const reader = notifier.register(['k'], '1-0-r', startOf('1-0-r'), true);
    const writer = notifier.register(['k'], '2-0-w', startOf('2-0-w'));
    const sleeps = [reader, writer].map((waiter) => waiter.sleep(60_000));
    // The last reader left: two masters name the writer first in line, the other three have no line.
    for (const master of [0, 1]) notifier.released('k', 'reader-value', '2-0-w', master);
    notifier.released('k', 'reader-value', undefined, 2);
    expect(await outcomes(sleeps)).toEqual(['asleep', 'released']);
    for (const waiter of [reader, writer]) waiter.leave();
    await notifier.close();
  });
});

describe('Notifier subscriptions', () => {
  it('subscriptions taking on a majority of masters wake the longest waiter of each key once (a release before them was missed)', async () => {
    const { notifier, listeners } = notifierOver(3);
    const waiters = [notifier.register(['a'], 't1', startOf('t1')), notifier.register(['a'], 't2', startOf('t2')), notifier.register(['b'], 't3', startOf('t3'))];
    const sleeps = waiters.map((waiter) => waiter.sleep(60_000));
    expect(listeners).toHaveLength(3); // one per master, opened with the first waiter
    listeners[0]!.subscribed();
    expect(await outcomes(sleeps)).toEqual(['asleep', 'asleep', 'asleep']);
    listeners[1]!.subscribed();
    listeners[2]!.subscribed();
    expect(await outcomes(sleeps)).toEqual(['subscribed', 'asleep', 'subscribed']);
    expect(await outcomes([waiters[0]!.sleep(60_000)])).toEqual(['asleep']); // the third master's did not wake it again
    for (const waiter of waiters) waiter.leave();
    await notifier.close();
  });
});

describe('parseReleased', () => {
  it('reads who left, the first in line and the key, keys with colons included', () => {
    expect(parseReleased('v1:123-ab:orders:42')).toEqual({ value: 'v1', head: '123-ab', key: 'orders:42' });
    expect(parseReleased('v1::orders:42')).toEqual({ value: 'v1', head: undefined, key: 'orders:42' });
    expect(parseReleased('no-separators')).toBeUndefined();
  });

  describe('the hand-off (issue 40)', () => {
    it("a majority of hand-offs of the waiter's expected value wakes it 'handed'; another value's only names it", async () => {
      const { notifier, listeners } = notifierOver(5);
      const waiter = notifier.register(['k'], 't1', 1);
      waiter.expect('v2', 1_000);
      const sleep = waiter.sleep(60_000);
      listeners[1]!.message('holder:t1=v2:k');
      listeners[2]!.message('holder:t1=v2:k');
      expect(await outcomes([sleep])).toEqual(['asleep']);
      expect(waiter.handedBy('v2')).toBe(2);
      notifier.turn('t1=v2', 't1', 3); // its rollback's reply: kept for it
      expect(await outcomes([sleep])).toEqual(['handed']);
      expect(waiter.handedBy('v2')).toBe(3);
      waiter.leave();
      await notifier.close();
    });

    it("a hand-off of another value than the expected one is not counted: it names the waiter, as a release does", async () => {
      const { notifier, listeners } = notifierOver(3);
      const waiter = notifier.register(['k'], 't1', 1);
      waiter.expect('v2', 1_000);
      const sleep = waiter.sleep(60_000);
      listeners[0]!.message('holder:t1=v1:k');
      listeners[1]!.message('holder:t1=v1:k');
      expect(waiter.handedBy('v2')).toBe(0);
      expect(await outcomes([sleep])).toEqual(['turn']);
      waiter.leave();
      await notifier.close();
    });

    it('a new expected value forgets the hand-offs of the last one', () => {
      const { notifier } = notifierOver(3);
      const waiter = notifier.register(['k'], 't1', 1);
      waiter.expect('v1', 1_000);
      notifier.turn('t1=v1', 'x', 0);
      waiter.expect(undefined);
      notifier.turn('t1=v1', 'x', 1);
      waiter.expect('v1');
      expect(waiter.handedBy('v1')).toBe(0);
      waiter.leave();
    });

    it("a master whose vote the restart guard withholds counts no hand-off, it only names the waiter", async () => {
      const { notifier } = notifierOver(3, (master) => master !== 1);
      const waiter = notifier.register(['k'], 't1', 1);
      waiter.expect('v1', 1_000);
      const sleep = waiter.sleep(60_000);
      notifier.turn('t1=v1', 'x', 0);
      notifier.turn('t1=v1', 'x', 1);
      expect(waiter.handedBy('v1')).toBe(1);
      expect(await outcomes([sleep])).toEqual(['turn']); // two masters named it
      waiter.leave();
      await notifier.close();
    });

    it('handed a minority, the waiter tries again after its split wait, doubled each time', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const { notifier } = notifierOver(5);
        const waiter = notifier.register(['k'], 't1', 1);
        waiter.expect('v1', 10);
        const first = waiter.sleep(60_000);
        notifier.turn('t1=v1', 'x', 0);
        await vi.advanceTimersByTimeAsync(9);
        expect(await outcomes([first])).toEqual(['asleep']);
        await vi.advanceTimersByTimeAsync(1);
        expect(await first).toBe('turn');
        waiter.expect(undefined);
        waiter.expect('v2', 10);
        const second = waiter.sleep(60_000);
        notifier.turn('t1=v2', 'x', 0);
        await vi.advanceTimersByTimeAsync(19);
        expect(await outcomes([second])).toEqual(['asleep']);
        await vi.advanceTimersByTimeAsync(1);
        expect(await second).toBe('turn');
        waiter.leave();
        await notifier.close();
      } finally {
        vi.useRealTimers();
      }
    });
  });
});
