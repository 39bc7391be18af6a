/**
 * redlock-quorum/prometheus: the metrics a scrape shows after known traffic on the five shared
 * masters (a fresh Redlock per test, so its stats start at zero), one registry shared by two
 * Redlocks, unregistering, and the argument checks. Real prom-client registries.
 */
import { Registry, register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ExecutionError, type Redlock } from '../../src/index.js';
import { registerRedlockMetrics } from '../../src/prometheus.js';
import { clockJumpProblem, jumpOneClockBack } from '../harness/clock-jump.js';
import { redlockOn, sleep, uniquePrefix, useSharedMasters } from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';

const shared = useSharedMasters();
const opened: Redlock[] = [];
afterEach(async () => {
  for (const redlock of opened.splice(0)) await redlock.quit();
});

function fresh(): Redlock {
  const redlock = redlockOn(shared.ports, { retryDelay: 20, retryJitter: 10 });
  opened.push(redlock);
  return redlock;
}

/** `name{labels} value` lines of the exposition format → value by series. */
async function scrape(registry: Registry): Promise<Map<string, number>> {
  const series = new Map<string, number>();
  for (const line of (await registry.metrics()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

describe('redlock-quorum/prometheus', () => {
  it('a scrape shows the traffic: counters from stats(), per-master answers, held gauge, wait and hold histograms', async () => {
    const redlock = fresh();
    const registry = new Registry();
    const unregister = registerRedlockMetrics(redlock, registry);
    const key = uniquePrefix('prom');
    try {
      const a = await redlock.acquire(key('a'), 5_000);
      await a.extend(5_000);
      await a.release();
      // Refused: held, and no retries.
      const held = await redlock.acquire(key('held'), 10_000);
      await expect(redlock.acquire(key('held'), 1_000, { retryCount: 0 })).rejects.toBeInstanceOf(ExecutionError);
      // A permit and a read hold count as locks too.
      const permit = await redlock.semaphore(key('sem'), 2).acquire(5_000);
      const read = await redlock.readWrite(key('rw')).read.acquire(5_000);
      await permit.release();
      await read.release();
      // Lost: released after its ttl ran out (lost, then released: one hold, ended "lost").
      const late = await redlock.acquire(key('late'), 100);
      oracle.ignore(late);
      await sleep(200);
      await late.release();

      const series = await scrape(registry);
      const acquired = 5; // a, held, permit, read, late
      expect(series.get('redlock_acquisitions_attempted_total')).toBe(acquired + 1);
      expect(series.get('redlock_acquisitions_succeeded_total')).toBe(acquired);
      expect(series.get('redlock_acquisitions_failed_total')).toBe(1);
      expect(series.get('redlock_acquisitions_reentered_total')).toBe(0);
      expect(series.get('redlock_extensions_succeeded_total')).toBe(1);
      expect(series.get('redlock_extensions_failed_total')).toBe(0);
      expect(series.get('redlock_extensions_automatic_total')).toBe(0);
      expect(series.get('redlock_releases_total')).toBe(acquired - 1); // all but "held"
      expect(series.get('redlock_losses_total')).toBe(1);
      expect(series.get('redlock_locks_held')).toBe(1);
      expect(series.get('redlock_acquire_wait_seconds_count')).toBe(acquired);
      expect(series.get('redlock_acquire_wait_seconds_bucket{le="+Inf"}')).toBe(acquired);
      expect(series.get('redlock_lock_hold_seconds_count{ended="released"}')).toBe(acquired - 2); // not held, not late
      expect(series.get('redlock_lock_hold_seconds_count{ended="lost"}')).toBe(1);
      expect(series.get('redlock_lock_hold_seconds_sum{ended="lost"}')).toBeGreaterThanOrEqual(0.1);
      expect(redlock.nodes).toHaveLength(5);
      for (const master of redlock.nodes) {
        for (const outcome of ['granted', 'refused', 'timeout', 'error']) {
          expect(series.has(`redlock_master_responses_total{master="${master}",outcome="${outcome}"}`)).toBe(true);
        }
      }
      // The refused acquire met "held" on a quorum at least; the sums match stats() of the same moment.
      const refused = redlock.nodes.map((master) => series.get(`redlock_master_responses_total{master="${master}",outcome="refused"}`)!);
      expect(refused.filter((count) => count >= 1).length).toBeGreaterThanOrEqual(3);
      const stats = redlock.stats();
      for (const [index, master] of redlock.nodes.entries()) {
        expect(series.get(`redlock_master_responses_total{master="${master}",outcome="granted"}`)).toBe(stats.masters[index]!.granted);
      }
      await held.release();
      expect((await scrape(registry)).get('redlock_locks_held')).toBe(0);
    } finally {
      unregister();
    }
  });

  it.skipIf(clockJumpProblem)('a master clock jump (restartGuard.clockJumps) counts in master_clock_jumps_total{master, direction}', async () => {
    const registry = new Registry();
    let unregister = (): void => undefined;
    let node = '';
    const jumps = await jumpOneClockBack((redlock) => {
      unregister = registerRedlockMetrics(redlock, registry);
      node = redlock.nodes[0]!;
    });
    try {
      expect(jumps.every((jump) => jump.node === node && jump.direction === 'backward')).toBe(true);
      const series = await scrape(registry);
      expect(series.get(`redlock_master_clock_jumps_total{master="${node}",direction="backward"}`)).toBe(jumps.length);
      expect([...series.keys()].filter((name) => name.startsWith('redlock_master_clock_jumps_total'))).toHaveLength(1);
    } finally {
      unregister();
    }
  });

  it('two Redlocks share a registry under two prefixes; the same prefix twice is refused and registers nothing', async () => {
    const [first, second] = [fresh(), fresh()];
    const registry = new Registry();
    const stopFirst = registerRedlockMetrics(first, registry);
    const before = (await registry.getMetricsAsJSON()).length;
    expect(() => registerRedlockMetrics(second, registry)).toThrow(/already has a metric redlock_acquisitions_attempted_total; give this Redlock another options.prefix/);
    expect((await registry.getMetricsAsJSON()).length).toBe(before);
    expect(second.listenerCount('acquired')).toBe(0);
    const stopSecond = registerRedlockMetrics(second, registry, { prefix: 'orders_lock_' });

    const lock = await second.acquire(uniquePrefix('prom-two')('r'), 5_000);
    await lock.release();
    const series = await scrape(registry);
    expect(series.get('redlock_acquisitions_succeeded_total')).toBe(0);
    expect(series.get('orders_lock_acquisitions_succeeded_total')).toBe(1);
    expect(series.get('orders_lock_lock_hold_seconds_count{ended="released"}')).toBe(1);
    stopFirst();
    stopSecond();
  });

  it('the returned function removes the metrics and the listeners (twice is harmless); the default registry is the global one', async () => {
    const redlock = fresh();
    const listeners = redlock.listenerCount('acquired');
    const stop = registerRedlockMetrics(redlock, undefined, { prefix: 'prom_test_global_' });
    try {
      expect(redlock.listenerCount('acquired')).toBe(listeners + 1);
      const lock = await redlock.acquire(uniquePrefix('prom-global')('r'), 5_000);
      await lock.release();
      expect(await register.metrics()).toMatch(/^prom_test_global_releases_total 1$/m);
    } finally {
      stop();
    }
    stop();
    expect(redlock.listenerCount('acquired')).toBe(listeners);
    expect(redlock.listenerCount('released')).toBe(0);
    expect(await register.metrics()).not.toContain('prom_test_global_');
    // Registered again after unregistering: the names are free.
    registerRedlockMetrics(redlock, register, { prefix: 'prom_test_global_' })();
  });

  it('bad arguments: a TypeError or RangeError before anything is registered', () => {
    const redlock = fresh();
    const registry = new Registry();
    const call = (...args: unknown[]) => () => (registerRedlockMetrics as (...rest: unknown[]) => () => void)(...args);
    expect(call(undefined, registry)).toThrow(TypeError);
    expect(call({ stats: 1 }, registry)).toThrow(/first argument must be a Redlock/);
    expect(call(redlock, {})).toThrow(/registry must be a prom-client Registry/);
    expect(call(redlock, registry, null)).toThrow(TypeError);
    expect(call(redlock, registry, { prefix: 7 })).toThrow(TypeError);
    expect(call(redlock, registry, { prefix: 'my-app.' })).toThrow(RangeError);
    expect(call(redlock, registry, { prefix: '1st_' })).toThrow(RangeError);
    expect(call(redlock, registry, { waitBuckets: 'fast' })).toThrow(TypeError);
    expect(call(redlock, registry, { waitBuckets: [] })).toThrow(TypeError);
    expect(call(redlock, registry, { holdBuckets: [1, 0.5] })).toThrow(/must increase/);
    expect(call(redlock, registry, { holdBuckets: [0, 1] })).toThrow(RangeError);
    expect(call(redlock, registry, { waitBuckets: [0.1, Number.POSITIVE_INFINITY] })).toThrow(RangeError);
    expect(registry.getMetricsAsArray()).toHaveLength(0);
    expect(redlock.listenerCount('acquired')).toBe(0);
    // An empty prefix is a valid one.
    registerRedlockMetrics(redlock, registry, { prefix: '' })();
  });
});
