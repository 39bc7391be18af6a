/**
 * Prometheus metrics, optional: `import { registerRedlockMetrics } from 'redlock-quorum/prometheus'`
 * (needs `prom-client`, an optional peer dependency; the main entry never loads it).
 *
 *   const unregister = registerRedlockMetrics(redlock);        // prom-client's global registry
 *   // GET /metrics → register.metrics()
 *
 * Two sources, each used for what it is good at:
 * - Counters and the held-locks gauge are read from `redlock.stats()` when Prometheus scrapes, so
 *   nothing is counted twice or missed, whatever happened between scrapes.
 * - Durations are histograms fed by the events (`acquired` → wait, `released` / `lost` → hold):
 *   buckets, unlike the percentiles in stats(), can be summed across instances and over time.
 *   Master clock jumps (`clockJump`), which stats() does not keep, are counted from their events too.
 */
import { Counter, Gauge, Histogram, register, type Registry } from 'prom-client';
import type { Lock } from '../lease/lock.js';
import type { AcquiredEvent, LostEvent, ReleasedEvent } from './events.js';
import type { ClockJumpEvent } from '../voters/master/health.js';
import type { RedlockStats } from './stats.js';
import type { Redlock } from '../redlock.js';

export interface RedlockMetricsOptions {
  /**
   * Prefixed to every metric name; give each Redlock that shares a registry its own. Default
   * `redlock_`. Letters, digits, `_` and `:`, not starting with a digit (Prometheus' names).
   */
  readonly prefix?: string | undefined;
  /** Upper bounds of `acquire_wait_seconds`' buckets, seconds, increasing. */
  readonly waitBuckets?: readonly number[] | undefined;
  /** Upper bounds of `lock_hold_seconds`' buckets, seconds, increasing. */
  readonly holdBuckets?: readonly number[] | undefined;
}

/** Every metric's name without the prefix, as exposed. */
const redlockMetricNames = Object.freeze([
  'acquisitions_attempted_total',
  'acquisitions_succeeded_total',
  'acquisitions_failed_total',
  'acquisitions_reentered_total',
  'acquisitions_handed_total',
  'extensions_succeeded_total',
  'extensions_failed_total',
  'extensions_automatic_total',
  'releases_total',
  'losses_total',
  'master_responses_total',
  'master_clock_jumps_total',
  'locks_held',
  'acquire_wait_seconds',
  'lock_hold_seconds',
] as const);

const DEFAULT_WAIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DEFAULT_HOLD_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];
const MASTER_OUTCOMES = ['granted', 'refused', 'timeout', 'error'] as const;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * Register a Redlock's metrics in `registry` (default: prom-client's global `register`). Returns a
 * function that removes them from the registry and stops listening to the Redlock's events.
 *
 * Exposed, with the default prefix `redlock_`:
 * - counters `redlock_acquisitions_{attempted,succeeded,failed,reentered,handed}_total`,
 *   `redlock_extensions_{succeeded,failed,automatic}_total`, `redlock_releases_total`,
 *   `redlock_losses_total`, and `redlock_master_responses_total{master="host:port",
 *   outcome="granted|refused|timeout|error"}` (refused: held by another value, or another waiter first in line),
 *   and with `restartGuard.clockJumps`, `redlock_master_clock_jumps_total{master="host:port",
 *   direction="forward|backward"}` (a forward one withholds that master's vote for a while);
 * - gauge `redlock_locks_held`: acquired and neither released nor lost yet;
 * - histograms `redlock_acquire_wait_seconds` (successful acquires, call to lock) and
 *   `redlock_lock_hold_seconds{ended="released|lost"}` (acquired to released, or to lost).
 *
 * Locks, semaphore permits and read/write holds all count as locks. Throws a TypeError or
 * RangeError for bad arguments, and an Error naming the metric when the registry already has one of
 * these names (another Redlock with the same prefix): nothing is registered then.
 */
export function registerRedlockMetrics(redlock: Redlock, registry: Registry = register, options: RedlockMetricsOptions = {}): () => void {
  const { prefix, waitBuckets, holdBuckets } = checkedArguments(redlock, registry, options);
  const names = redlockMetricNames.map((name) => prefix + name);
  // Checked before registering any: prom-client throws on the first duplicate and would leave the
  // ones registered before it behind.
  const taken = names.find((name) => registry.getSingleMetric(name) !== undefined);
  if (taken !== undefined) {
    throw new Error(`registerRedlockMetrics: the registry already has a metric ${taken}; give this Redlock another options.prefix`);
  }
  const registers = [registry];
  registerFromStats(redlock, prefix, registers);
  const stopObserving = observeHolds(redlock, prefix, registers, waitBuckets, holdBuckets);
  const stopCountingJumps = countClockJumps(redlock, prefix, registers);
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    stopObserving();
    stopCountingJumps();
    for (const name of names) registry.removeSingleMetric(name);
  };
}

/** The arguments, checked before anything is registered: the prefix and the buckets to use. */
function checkedArguments(
  redlock: unknown,
  registry: unknown,
  options: RedlockMetricsOptions,
): { prefix: string; waitBuckets: number[]; holdBuckets: number[] } {
  if (!isRedlock(redlock)) throw new TypeError('registerRedlockMetrics: the first argument must be a Redlock');
  if (!isRegistry(registry)) throw new TypeError('registerRedlockMetrics: registry must be a prom-client Registry');
  if (typeof options !== 'object' || options === null) throw new TypeError('registerRedlockMetrics: options must be an object');
  const prefix = options.prefix ?? 'redlock_';
  if (typeof prefix !== 'string') throw new TypeError('registerRedlockMetrics: options.prefix must be a string');
  if (!METRIC_NAME.test(`${prefix}x`)) {
    throw new RangeError(`registerRedlockMetrics: options.prefix ${JSON.stringify(prefix)} is not the start of a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)`);
  }
  const waitBuckets = buckets('waitBuckets', options.waitBuckets ?? DEFAULT_WAIT_BUCKETS);
  const holdBuckets = buckets('holdBuckets', options.holdBuckets ?? DEFAULT_HOLD_BUCKETS);
  return { prefix, waitBuckets, holdBuckets };
}

/** The counters and the gauge read from `redlock.stats()` at each scrape. */
function registerFromStats(redlock: Redlock, prefix: string, registers: Registry[]): void {
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
  const total = (name: (typeof redlockMetricNames)[number], help: string, read: (stats: RedlockStats) => number): void => {
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
  total('acquisitions_handed_total', 'Acquire calls that got the lock handed over by its release while they waited in line', (s) => s.acquisitions.handed);
  total('extensions_succeeded_total', 'Extensions that moved the expiry on a quorum (by hand or automatic)', (s) => s.extensions.succeeded);
  total('extensions_failed_total', 'Extensions that failed', (s) => s.extensions.failed);
  total('extensions_automatic_total', 'Successful automatic extensions (using(), autoExtend)', (s) => s.extensions.automatic);
  total('releases_total', 'Releases', (s) => s.releases);
  total('losses_total', 'Locks lost while held: validity ended before release, or extension failed', (s) => s.losses);

  new Counter({
    name: `${prefix}master_responses_total`,
    help: 'Answers of each master to acquire, extend and release operations (refused: held by another value, or another waiter first in line)',
    labelNames: ['master', 'outcome'],
    registers,
    collect() {
      this.reset();
      for (const master of stats().masters) {
        for (const outcome of MASTER_OUTCOMES) this.inc({ master: master.node, outcome }, master[outcome]);
      }
    },
  });

  new Gauge({
    name: `${prefix}locks_held`,
    help: 'Locks acquired and neither released nor lost yet',
    registers,
    collect() {
      this.set(stats().held);
    },
  });
}

/** The histograms, fed by the Redlock's events; returns what stops listening. */
function observeHolds(redlock: Redlock, prefix: string, registers: Registry[], waitBuckets: number[], holdBuckets: number[]): () => void {
  const wait = new Histogram({
    name: `${prefix}acquire_wait_seconds`,
    help: 'Successful acquires: from the call to the lock',
    buckets: waitBuckets,
    registers,
  });
  const hold = new Histogram({
    name: `${prefix}lock_hold_seconds`,
    help: 'Locks no longer held: from acquired to released, or to lost',
    labelNames: ['ended'],
    buckets: holdBuckets,
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
  };
}

/** The clock-jump counter, fed by the Redlock's `clockJump` events; returns what stops listening. */
function countClockJumps(redlock: Redlock, prefix: string, registers: Registry[]): () => void {
  const jumps = new Counter({
    name: `${prefix}master_clock_jumps_total`,
    help: "Jumps of a master's clock beyond the drift allowance (restartGuard.clockJumps); forward: its vote withheld for a while",
    labelNames: ['master', 'direction'],
    registers,
  });
  const onClockJump = (event: ClockJumpEvent): void => jumps.inc({ master: event.node, direction: event.direction });
  redlock.on('clockJump', onClockJump);
  return () => redlock.off('clockJump', onClockJump);
}

/** Duck-typed, not instanceof: a Redlock from another copy of the package (or a registry of another prom-client) works as well. */
function hasMethods(value: unknown, names: readonly string[]): boolean {
  return typeof value === 'object' && value !== null && names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

const isRedlock = (value: unknown): value is Redlock => hasMethods(value, ['stats', 'on', 'off']);
const isRegistry = (value: unknown): value is Registry => hasMethods(value, ['getSingleMetric', 'removeSingleMetric', 'registerMetric']);

function buckets(option: string, bounds: unknown): number[] {
  if (!Array.isArray(bounds) || bounds.length === 0) throw new TypeError(`registerRedlockMetrics: options.${option} must be a non-empty array of numbers`);
  const seconds: number[] = [];
  for (const [index, bound] of (bounds as unknown[]).entries()) {
    if (typeof bound !== 'number' || !Number.isFinite(bound) || bound <= 0) {
      throw new RangeError(`registerRedlockMetrics: options.${option}[${index}] must be a finite number of seconds > 0, got ${String(bound)}`);
    }
    if (index > 0 && bound <= seconds[index - 1]!) {
      throw new RangeError(`registerRedlockMetrics: options.${option} must increase, but [${index}] = ${bound} follows ${seconds[index - 1]}`);
    }
    seconds.push(bound);
  }
  return seconds;
}
