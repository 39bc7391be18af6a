/**
 * Observability: redlock.stats(), the events with per-master outcomes, and the same events on
 * node:diagnostics_channel. Shared masters (unique keys), proxies in front of them for timeouts.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  channelNames,
  ExecutionError,
  type RedlockEventName,
  LockLostError,
  Redlock,
  type AcquiredEvent,
  type ExtendedEvent,
  type FailedEvent,
  type LostEvent,
  type ReleasedEvent,
} from '../../src/index.js';
import { FaultProxy } from '../../src/testing/proxy.js';
import { eventually, sleep, uniquePrefix, urlOf, useSharedMasters, valuesOn } from '../harness/cluster.js';

const shared = useSharedMasters();
const proxies: FaultProxy[] = [];
const opened: Redlock[] = [];
let ports: number[];
beforeAll(async () => {
  ports = shared.ports;
  for (const port of ports) proxies.push(await FaultProxy.start(port));
});
afterAll(async () => {
  for (const redlock of opened) await redlock.quit();
  for (const proxy of proxies) await proxy.close();
});

function fresh(urls: string[] = ports.map(urlOf), settings: ConstructorParameters<typeof Redlock>[1] = {}): Redlock {
  const redlock = new Redlock(urls, { retryDelay: 20, retryJitter: 10, ...settings });
  redlock.on('error', () => undefined);
  opened.push(redlock);
  return redlock;
}

interface Seen {
  acquired: AcquiredEvent[];
  extended: ExtendedEvent[];
  released: ReleasedEvent[];
  lost: LostEvent[];
  failed: FailedEvent[];
}

function record(redlock: Redlock): Seen {
  const seen: Seen = { acquired: [], extended: [], released: [], lost: [], failed: [] };
  redlock.on('acquired', (event) => seen.acquired.push(event));
  redlock.on('extended', (event) => seen.extended.push(event));
  redlock.on('released', (event) => seen.released.push(event));
  redlock.on('lost', (event) => seen.lost.push(event));
  redlock.on('failed', (event) => seen.failed.push(event));
  return seen;
}

describe('stats and events', () => {
  it('count acquisitions, extensions, releases, losses and every master\'s answers, with wait and hold percentiles', async () => {
    // No answer may time out here (the test counts them): per-master timeouts with room for a loaded machine.
    const redlock = fresh(undefined, { nodeTimeout: 1_000 });
    const other = fresh(undefined, { nodeTimeout: 1_000 });
    const seen = record(redlock);
    const key = uniquePrefix('stats');
    for (const name of ['a', 'b', 'c']) {
      const lock = await redlock.acquire(key(name), 2_000);
      await sleep(10);
      await lock.release();
    }
    const extended = await redlock.acquire(key('d'), 2_000);
    await extended.extend(2_000);
    const held = await other.acquire(key('e'), 2_000);
    await expect(redlock.acquire(key('e'), 2_000, { retryCount: 1 })).rejects.toBeInstanceOf(ExecutionError);
    const short = await redlock.acquire(key('f'), 150, { nodeTimeout: 140 });
    void short.signal; // watched: its expiry is noticed when it happens
    await eventually(() => seen.lost.length === 1);
    await redlock.using(key('g'), 2_000, () => redlock.using(key('g'), 2_000, () => undefined)); // one re-entered

    const stats = redlock.stats();
    expect(stats.acquisitions).toEqual({ attempted: 7, succeeded: 6, failed: 1, reentered: 1, handed: 0 });
    expect(stats.extensions).toEqual({ succeeded: 1, failed: 0, automatic: 0 });
    expect(stats.releases).toBe(4);
    expect(stats.losses).toBe(1);
    expect(stats.held).toBe(1); // d
    expect(stats.waitMs.count).toBe(6);
    expect(stats.holdMs.count).toBe(5);
    expect(stats.holdMs.p50).toBeGreaterThanOrEqual(9);
    expect(stats.holdMs.max).toBeGreaterThanOrEqual(100); // f, held until its validity ended (ttl 150 − acquire time − drift)
    expect(stats.masters.map((master) => master.node)).toEqual(ports.map((port) => `127.0.0.1:${port}`));
    const total = (pick: (m: (typeof stats.masters)[number]) => number): number => stats.masters.reduce((sum, m) => sum + pick(m), 0);
    // Two refused attempts on e: refused by (nearly) every master, and each rolled back (release: `lost`).
    expect(total((m) => m.refused)).toBeGreaterThanOrEqual(2 * 3);
    expect(total((m) => m.granted)).toBeGreaterThanOrEqual(3 * 6 + 3 * 5 + 3); // acquires, releases, extend
    expect(total((m) => m.timeout + m.error)).toBe(0);

    expect(seen.acquired).toHaveLength(6);
    expect(seen.acquired[0]!.attempt.outcomes).toHaveLength(5);
    expect(seen.acquired[0]!.attempts).toBe(1);
    expect(seen.extended).toHaveLength(1);
    expect(seen.extended[0]!.automatic).toBe(false);
    expect(seen.released).toHaveLength(4);
    expect(seen.released[0]!.released).toBe(true);
    expect(seen.released[0]!.heldMs).toBeGreaterThanOrEqual(9);
    expect(seen.failed).toHaveLength(1);
    expect(seen.failed[0]!.operation).toBe('acquire');
    expect(seen.failed[0]!.attempts).toHaveLength(2);
    expect(seen.failed[0]!.error).toBeInstanceOf(ExecutionError);
    expect(seen.lost[0]!.resources).toEqual([key('f')]);
    expect(seen.lost[0]!.error).toBeInstanceOf(LockLostError);
    await extended.release();
    await held.release();
  });

  it('a lock released after its validity ended counts as lost, once', async () => {
    const redlock = fresh();
    const seen = record(redlock);
    const lock = await redlock.acquire(uniquePrefix('late')('r'), 100);
    await sleep(150);
    expect((await lock.release()).released).toBe(false);
    expect(seen.lost).toHaveLength(1);
    expect(seen.lost[0]!.error.why).toMatch(/validity ended before it was released/);
    expect(redlock.stats()).toMatchObject({ losses: 1, releases: 1, held: 0 });
  });

  it('an auto-extending lock that cannot be extended: failed extend events, then lost, with per-master outcomes', async () => {
    const redlock = fresh(proxies.map((proxy) => proxy.url), { nodeTimeout: 100, retryCount: 2 });
    const seen = record(redlock);
    const lock = await redlock.acquire(uniquePrefix('autolost')('r'), 800, { autoExtend: true, automaticExtensionThreshold: 600 });
    await eventually(() => seen.extended.length >= 1, 3_000);
    expect(seen.extended[0]!.automatic).toBe(true);
    for (const proxy of proxies.slice(0, 3)) proxy.mode = 'blackhole';
    try {
      await eventually(() => seen.lost.length === 1, 5_000);
      const error = seen.lost[0]!.error;
      expect(lock.signal.reason).toBe(error);
      expect(error.attempts.length).toBeGreaterThan(0);
      expect(error.attempts[0]!.outcomes.filter((o) => o.status === 'timeout').length).toBeGreaterThanOrEqual(3);
      const stats = redlock.stats();
      expect(stats.losses).toBe(1);
      expect(stats.extensions.automatic).toBeGreaterThanOrEqual(1);
      expect(stats.masters.slice(0, 3).every((master) => master.timeout > 0)).toBe(true);
      // (The healthy masters are not asserted on: on a loaded machine they may miss a timeout too.)
    } finally {
      for (const proxy of proxies) {
        proxy.mode = 'pass';
        proxy.resetAll();
      }
    }
  });
});

describe('diagnostics_channel', () => {
  it('publishes the same events, for every Redlock in the process, without any listener on the Redlock', async () => {
    const published: Array<[string, unknown]> = [];
    const subscribers = Object.entries(channelNames).map(([event, name]) => {
      const onMessage = (message: unknown): void => void published.push([event, message]);
      diagnosticsChannel.subscribe(name, onMessage);
      return () => diagnosticsChannel.unsubscribe(name, onMessage);
    });
    try {
      const redlock = fresh();
      const key = uniquePrefix('channel')('r');
      await redlock.using(key, 2_000, () => sleep(5));
      const events = published.filter(([, message]) => (message as { resources?: string[] }).resources?.[0] === key);
      expect(events.map(([event]) => event)).toEqual(['acquired', 'released']);
      const acquired = events[0]![1] as AcquiredEvent;
      expect(acquired.attempt.outcomes.filter((outcome) => outcome.status === 'granted').length).toBeGreaterThanOrEqual(3);
      expect(acquired.lock.resources).toEqual([key]);
    } finally {
      for (const unsubscribe of subscribers) unsubscribe();
    }
  });
});

/**
 * Runs `body` with the process' uncaught exceptions collected instead of reported (vitest's own
 * handlers are set aside meanwhile, and restored): where the library reports a listener's throw.
 */
async function collectingUncaught<T>(body: (thrown: unknown[]) => Promise<T>): Promise<T> {
  const thrown: unknown[] = [];
  const saved = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  const collect = (error: unknown): void => void thrown.push(error);
  process.on('uncaughtException', collect);
  try {
    return await body(thrown);
  } finally {
    process.off('uncaughtException', collect);
    for (const listener of saved) process.on('uncaughtException', listener);
  }
}

describe('a listener that throws', () => {
  it('acquired: acquire() still resolves with a valid lock, the error is an uncaught exception, and release leaves nothing', async () => {
    const redlock = fresh();
    const boom = new Error('acquired listener failed');
    const seen: AcquiredEvent[] = [];
    redlock.on('acquired', () => {
      throw boom;
    });
    redlock.on('acquired', (event) => seen.push(event)); // a later listener still sees the event
    const key = uniquePrefix('throwing-acquired')('r');
    await collectingUncaught(async (thrown) => {
      const lock = await redlock.acquire(key, 5_000);
      expect(lock.expiration).toBeGreaterThan(Date.now());
      expect(seen.map((event) => event.lock)).toEqual([lock]);
      const values = await valuesOn(shared.direct, key);
      expect(values.filter((value) => value === lock.value).length).toBeGreaterThanOrEqual(3);
      await eventually(() => thrown.length > 0);
      expect(thrown).toEqual([boom]);
      expect((await lock.release()).released).toBe(true);
    });
    await eventually(async () => (await valuesOn(shared.direct, key)).every((value) => value === null));
    expect(redlock.stats().held).toBe(0);
  });

  it('acquired: using() runs the routine, resolves with its result and releases (nothing extended afterwards)', async () => {
    const redlock = fresh();
    const boom = new Error('acquired listener failed in using');
    redlock.on('acquired', () => {
      throw boom;
    });
    const key = uniquePrefix('throwing-using')('r');
    const extended: ExtendedEvent[] = [];
    redlock.on('extended', (event) => extended.push(event));
    await collectingUncaught(async (thrown) => {
      // A short ttl: the lock extends itself while the routine runs, and must stop when it ends.
      const result = await redlock.using(key, 1_000, async (signal, lock) => {
        const values = await valuesOn(shared.direct, key);
        expect(values.filter((value) => value === lock.value).length).toBeGreaterThanOrEqual(3);
        await sleep(1_200); // past the ttl: extended meanwhile
        expect(signal.aborted).toBe(false);
        return 'routine ran';
      });
      expect(result).toBe('routine ran');
      expect(thrown).toEqual([boom]);
    });
    expect(extended.length).toBeGreaterThanOrEqual(1);
    expect(await valuesOn(shared.direct, key)).toEqual([null, null, null, null, null]);
    const after = extended.length;
    await sleep(1_200);
    expect(extended).toHaveLength(after);
    expect(redlock.stats().held).toBe(0);
  });

  it('on every event: no call changes its outcome, later listeners still see the event, each error is an uncaught exception', async () => {
    const events: RedlockEventName[] = ['acquired', 'extended', 'released', 'lost', 'failed', 'error', 'nodeDown', 'nodeUp'];
    const redlock = new Redlock([proxies[0]!.url, ...ports.slice(1).map(urlOf)], { retryDelay: 20, retryJitter: 10 });
    opened.push(redlock);
    const heard = new Map<RedlockEventName, number>();
    for (const event of events) {
      redlock.on(event, () => {
        throw new Error(`listener of ${event}`);
      });
      redlock.on(event, () => void heard.set(event, (heard.get(event) ?? 0) + 1));
    }
    const other = fresh();
    const key = uniquePrefix('throwing-every');
    await collectingUncaught(async (thrown) => {
      const lock = await redlock.acquire(key('a'), 5_000);
      await expect(redlock.extend(lock, 5_000)).resolves.toBe(lock);
      expect((await lock.release()).released).toBe(true);
      const held = await other.acquire(key('b'), 5_000);
      await expect(redlock.acquire(key('b'), 5_000, { retryCount: 0 })).rejects.toBeInstanceOf(ExecutionError);
      await held.release();
      const late = await redlock.acquire(key('c'), 100);
      await sleep(150);
      expect((await late.release()).released).toBe(false); // lost, then released
      await eventually(() => redlock.health().every((master) => master.state === 'up'));
      try {
        proxies[0]!.mode = 'refuse';
        proxies[0]!.resetAll();
        await eventually(() => redlock.health()[0]!.state === 'down');
      } finally {
        proxies[0]!.mode = 'pass';
      }
      await eventually(() => redlock.health()[0]!.state === 'up', 10_000);
      await eventually(() => events.every((event) => heard.has(event)));
      await sleep(20); // the last emissions' reports, on the next tick
      const messages = thrown.map((error) => (error instanceof Error ? error.message : String(error)));
      expect(new Set(messages)).toEqual(new Set(events.map((event) => `listener of ${event}`)));
      expect(messages).toHaveLength([...heard.values()].reduce((sum, count) => sum + count, 0));
    });
    for (const name of ['a', 'b', 'c']) expect(await valuesOn(shared.direct, key(name))).toEqual([null, null, null, null, null]);
  });
});
