/**
 * Prometheus metrics for a Redlock, with prom-client. Copy this file into your service:
 *
 *   const registry = new Registry();
 *   const unregister = registerRedlockMetrics(redlock, registry);
 *   // GET /metrics → registry.metrics()
 *
 * Two sources, each used for what it is good at:
 * - Counters and the held-locks gauge are read from `redlock.stats()` when Prometheus scrapes, so
 *   nothing is counted twice or missed, whatever happened between scrapes.
 * - Durations are histograms fed by the events (`acquired` → wait, `released` / `lost` → hold):
 *   buckets, unlike the percentiles in stats(), can be summed across instances and over time.
 *
 * Exposed, with the default prefix `redlock_`:
 *   redlock_acquisitions_{attempted,succeeded,failed,reentered}_total
 *   redlock_extensions_{succeeded,failed,automatic}_total   redlock_releases_total
 *   redlock_losses_total   redlock_locks_held
 *   redlock_master_responses_total{master="host:port", outcome="granted|refused|timeout|error"}
 *   redlock_acquire_wait_seconds (histogram)   redlock_lock_hold_seconds{ended="released|lost"} (histogram)
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { AcquiredEvent, Lock, LostEvent, Redlock, RedlockStats, ReleasedEvent } from '../../src/index.js'; // in your code: from 'redlock-quorum'

export interface RedlockMetricsOptions {
  /** Prefixed to every metric name; give each Redlock sharing a registry its own. Default `redlock_`. */
  readonly prefix?: string;
  /** Upper bounds of the wait histogram's buckets, seconds. */
  readonly waitBuckets?: readonly number[];
  /** Upper bounds of the hold histogram's buckets, seconds. */
  readonly holdBuckets?: readonly number[];
}

const MASTER_OUTCOMES = ['granted', 'refused', 'timeout', 'error'] as const;

/** Register the metrics in `registry`; the returned function removes them and the event listeners. */
export function registerRedlockMetrics(redlock: Redlock, registry: Registry, options: RedlockMetricsOptions = {}): () => void {
  const prefix = options.prefix ?? 'redlock_';
  const registers = [registry];
  const names: string[] = [];

  // The registry runs every metric's collect in one synchronous pass per scrape: take one snapshot
  // for that pass, so the figures of a scrape agree with each other (attempted ≥ succeeded + failed).
  let snapshot: RedlockStats | undefined;
  const stats = (): RedlockStats => {
    if (!snapshot) {
      snapshot = redlock.stats();
      queueMicrotask(() => (snapshot = undefined));
    }
    return snapshot;
  };

  // A counter whose value is a running total kept by stats(): reset and set to it at each scrape.
  const total = (name: string, help: string, read: (stats: RedlockStats) => number): void => {
    names.push(prefix + name);
    new Counter({
      name: prefix + name,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(read(stats()));
      },
    });
  };
  total('acquisitions_attempted_total', 'Acquire calls that went to the masters', (s) => s.acquisitions.attempted);
  total('acquisitions_succeeded_total', 'Acquire calls that got the lock', (s) => s.acquisitions.succeeded);
  total('acquisitions_failed_total', 'Acquire calls that failed: no quorum within the retries, or cancelled', (s) => s.acquisitions.failed);
  total('acquisitions_reentered_total', 'Acquires that re-entered a lock held by an enclosing using() routine', (s) => s.acquisitions.reentered);
  total('extensions_succeeded_total', 'Extensions that moved the expiry on a quorum (by hand or automatic)', (s) => s.extensions.succeeded);
  total('extensions_failed_total', 'Extensions that failed', (s) => s.extensions.failed);
  total('extensions_automatic_total', 'Successful automatic extensions (using(), autoExtend)', (s) => s.extensions.automatic);
  total('releases_total', 'Releases', (s) => s.releases);
  total('losses_total', 'Locks lost while held: validity ended before release, or extension failed', (s) => s.losses);

  names.push(`${prefix}master_responses_total`);
  new Counter({
    name: `${prefix}master_responses_total`,
    help: 'Answers of each master to acquire, extend and release operations (refused: held by another value)',
    labelNames: ['master', 'outcome'],
    registers,
    collect() {
      this.reset();
      for (const master of stats().masters) {
        for (const outcome of MASTER_OUTCOMES) this.inc({ master: master.node, outcome }, master[outcome]);
      }
    },
  });

  names.push(`${prefix}locks_held`);
  new Gauge({
    name: `${prefix}locks_held`,
    help: 'Locks acquired and neither released nor lost yet',
    registers,
    collect() {
      this.set(stats().held);
    },
  });

  names.push(`${prefix}acquire_wait_seconds`, `${prefix}lock_hold_seconds`);
  const wait = new Histogram({
    name: `${prefix}acquire_wait_seconds`,
    help: 'Successful acquires: from the call to the lock',
    buckets: [...(options.waitBuckets ?? [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])],
    registers,
  });
  const hold = new Histogram({
    name: `${prefix}lock_hold_seconds`,
    help: 'Locks no longer held: from acquired to released, or to lost',
    labelNames: ['ended'],
    buckets: [...(options.holdBuckets ?? [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300])],
    registers,
  });

  // A lock lost and then released emits both events; its hold ended when it was lost.
  const lost = new WeakSet<Lock>();
  const onAcquired = (event: AcquiredEvent): void => wait.observe(event.waitMs / 1000);
  const onLost = (event: LostEvent): void => {
    lost.add(event.lock);
    hold.observe({ ended: 'lost' }, event.heldMs / 1000);
  };
  const onReleased = (event: ReleasedEvent): void => {
    if (!lost.has(event.lock)) hold.observe({ ended: 'released' }, event.heldMs / 1000);
  };
  redlock.on('acquired', onAcquired);
  redlock.on('lost', onLost);
  redlock.on('released', onReleased);

  return () => {
    redlock.off('acquired', onAcquired);
    redlock.off('lost', onLost);
    redlock.off('released', onReleased);
    for (const name of names) registry.removeSingleMetric(name);
  };
}
