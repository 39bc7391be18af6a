import { describe, expect, it } from 'vitest';
import { parseReleased } from '../../src/scripts/index.js';
import { Notifier, type ReleaseListener, type Subscribe, type WakeSource } from '../../src/waiting.js';

/** What each waiter's sleep resolved with, or 'asleep' if it still sleeps after this turn. */
async function outcomes(sleeps: ReadonlyArray<Promise<WakeSource>>): Promise<Array<WakeSource | 'asleep'>> {
  const asleep = new Promise<'asleep'>((resolve) => setImmediate(() => resolve('asleep')));
  return Promise.all(sleeps.map((sleep) => Promise.race([sleep, asleep])));
}

describe('Notifier', () => {
  it('an announcement naming a ticket wakes that waiter only, wherever it stands in this process', async () => {
    const notifier = new Notifier([]);
    const waiters = ['t1', 't2', 't3'].map((ticket) => notifier.register(['k'], ticket));
    const sleeps = waiters.map((waiter) => waiter.sleep(60_000));
    notifier.released('k', 'value-1', 't2');
    expect(await outcomes(sleeps)).toEqual(['asleep', 'turn', 'asleep']);
    for (const waiter of waiters) waiter.leave();
    await notifier.close();
  });

  it("an announcement naming another process' ticket wakes nobody here", async () => {
    const notifier = new Notifier([]);
    const waiter = notifier.register(['k'], 't1');
    const sleep = waiter.sleep(60_000);
    notifier.released('k', 'value-1', 'elsewhere');
    expect(await outcomes([sleep])).toEqual(['asleep']);
    waiter.leave();
    await notifier.close();
  });

  it('an announcement naming nobody wakes the longest-waiting waiter of the key', async () => {
    const notifier = new Notifier([]);
    const waiters = ['t1', 't2'].map((ticket) => notifier.register(['k'], ticket));
    const other = notifier.register(['other'], 't3');
    const sleeps = [...waiters, other].map((waiter) => waiter.sleep(60_000));
    notifier.released('k', 'value-1', undefined);
    expect(await outcomes(sleeps)).toEqual(['released', 'asleep', 'asleep']);
    for (const waiter of [...waiters, other]) waiter.leave();
    await notifier.close();
  });

  it('every master announcing the same release wakes the waiter once; its own rollback wakes nobody', async () => {
    const notifier = new Notifier([]);
    const waiter = notifier.register(['k'], 't1');
    waiter.ownValue = 'own-attempt';
    notifier.released('k', 'own-attempt', 't1');
    notifier.released('k', 'value-1', 't1');
    notifier.released('k', 'value-1', 't1'); // the same release, from another master
    expect(await outcomes([waiter.sleep(60_000)])).toEqual(['turn']);
    expect(await outcomes([waiter.sleep(60_000)])).toEqual(['asleep']);
    waiter.leave();
    await notifier.close();
  });
});

describe('Notifier subscriptions', () => {
  it('a subscription taking wakes the longest waiter of each key once (a release before it was missed)', async () => {
    const listeners: ReleaseListener[] = [];
    const subscribe: Subscribe = (listener) => {
      listeners.push(listener);
      return { close: () => Promise.resolve() };
    };
    const notifier = new Notifier([subscribe, subscribe, subscribe]);
    const waiters = [notifier.register(['a'], 't1'), notifier.register(['a'], 't2'), notifier.register(['b'], 't3')];
    const sleeps = waiters.map((waiter) => waiter.sleep(60_000));
    expect(listeners).toHaveLength(3); // one per master, opened with the first waiter
    for (const listener of listeners) listener.subscribed();
    expect(await outcomes(sleeps)).toEqual(['released', 'asleep', 'released']);
    expect(await outcomes([waiters[0]!.sleep(60_000)])).toEqual(['asleep']); // the other two masters' did not wake it again
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
});
