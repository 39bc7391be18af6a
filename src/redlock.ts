/**
 * Redlock: settings, and acquire / extend / release as the Redlock algorithm has them
 * (docs/design/core-layers.md has where each part lives). The fan-out is quorum.ts, the timing
 * maths validity.ts, the masters src/voters/.
 */
import { EventEmitter, setMaxListeners } from 'node:events';
import {
  ExecutionError,
  LockExpiredError,
  LockLostError,
  LockReleasedError,
  RedlockClosedError,
  ResourceLockedError,
  attemptRecord,
  formatResources,
  type AttemptRecord,
} from './errors.js';
import { RenewalScheduler } from './lease/lifetime.js';
import { EXCLUSIVE, Lock, type FencedLock, type LeaseKind, type ReleaseResult, type Routine } from './lease/lock.js';
import { ReadWriteLock, Semaphore, splitUsing, type Admission, type LeaseOwner } from './primitives/lease-type.js';
import { Notifier, type Waiter } from './acquisition/waiting.js';
import { MasterClock } from './acquisition/master-clock.js';
import { channels, reportListenerError, StatsRecorder, type RedlockEvents, type RedlockStats } from './observability/events.js';
import { RedisNode } from './voters/master/master.js';
import type { Voter } from './voters/voter.js';
import { ClusterVoter } from './voters/cluster/cluster-voter.js';
import { clusterConfigOf } from './voters/cluster/config.js';
import { clusterKeysProblem } from './voters/cluster/slots.js';
import type { HealthHooks, MasterHealth } from './voters/master/health.js';
import {
  expectedFingerprints,
  forceReleaseOn,
  inspectOn,
  operatorSettings,
  type ForceReleaseOptions,
  type ForceReleaseResult,
  type InspectOptions,
  type OperatorCall,
  type ResourceInspection,
} from './operator/inspect.js';
import type { NodeInput } from './clients/inputs.js';
import { Cancellation, fanOut, type FanOutOptions, type FanOutResult, type NodeOperation } from './protocol/fan-out.js';
import { newTicket, type LockOperation, type OperationReply } from './script/codec.js';
import {
  checkName,
  normalizeResources,
  resolveSettings,
  validateAutoExtension,
  validateSettings,
  validateLimit,
  validateTtl,
  describe,
  type CallSettings,
  type EffectiveSettings,
  type FencedSettings,
  type Settings,
  type UsingSettings,
} from './config/settings.js';
import { sleep } from './protocol/timers.js';
import { newLockValue } from './lease/values.js';
import { expirationMs, systemClock, validityMs, type Clock } from './protocol/validity.js';
import { judgeHeld, judgeOf } from './protocol/votes.js';
import { fallbackDelayMs, ticketTtlOf, waitMs } from './acquisition/retry.js';
import { acquireFailure, describeVote, remember } from './acquisition/failure.js';
import { ReentrancyScope } from './lease/reentrancy.js';

/**
 * When an attempt began, read on both clocks at once before its first command left: elapsed time
 * is measured on the monotonic clock, the expiration is anchored on the epoch one (validity.ts).
 */
interface AttemptStart {
  readonly monotonicMs: number;
  readonly epochMs: number;
}

/** One acquire call's state across its attempts (#acquire). */
interface AcquireCall {
  readonly admission: Admission;
  readonly ttlMs: number;
  readonly effective: EffectiveSettings;
  readonly callSettings: Partial<Settings>;
  readonly signal: AbortSignal | undefined;
  readonly autoExtend: boolean | undefined;
  readonly fencing: boolean;
  /** When the call began, on the monotonic clock: its ticket's place is this on the masters' clock. */
  readonly startMs: number;
  readonly ticket: string;
  /** The ticket in the masters' lines: an exclusive acquire's; '' for readers and permits. */
  readonly inLine: string;
  readonly attempts: AttemptRecord[];
  retries: number;
  readonly patienceMs: number;
  /** The slot a permit's next attempt tries first. */
  firstSlot: number;
  waiter: Waiter | undefined;
}

/** A semaphore's largest limit: a permit's acquire names every slot, on every master. */
const MAX_PERMITS = 1024;

export class Redlock extends EventEmitter<RedlockEvents> {
  readonly #nodes: readonly Voter[];
  /** Some voter is a Redis Cluster: a lock's keys must share a slot (voters/cluster/slots.ts). */
  readonly #clustered: boolean;
  readonly #labels: readonly string[];
  /** Each master as votesFor / votesAgainst name it (errors.ts, ExecutionStats). */
  readonly #voters: readonly unknown[];
  readonly #settings: Partial<Settings>;
  readonly #clock: Clock = systemClock;
  readonly #renewals = new RenewalScheduler();
  readonly #notifier: Notifier;
  /** Where this process' waiters stand in the masters' lines (master-clock.ts). */
  readonly #masterClock = new MasterClock(() => this.#clock.monotonicMs());
  /** Per async chain: the resources held by enclosing `using()` routines, and by which lock. */
  readonly #scope = new ReentrancyScope(() => this.#clock.epochMs());
  readonly #stats: StatsRecorder;
  #closed = false;
  /** The `replicas` setting for master `index` (0: its grants need no replica). */
  #replicasOf(index: number): number {
    const setting = this.#settings.replicas ?? 0;
    return typeof setting === 'number' ? setting : setting[index]!;
  }

  /** Aborted by quit(): wakes every acquire or extend sleeping between attempts (one listener each: no limit). */
  readonly #closing = new AbortController();

  /**
   * @param nodes node-redis clients you created (never closed by us; connected if they are not),
   *   and/or `redis://` / `rediss://` URLs or node-redis client options (we create, own and close those).
   */
  constructor(nodes: readonly NodeInput[], settings?: Partial<Settings>) {
    super();
    setMaxListeners(0, this.#closing.signal);
    if (!Array.isArray(nodes)) throw new TypeError('nodes must be an array of node-redis clients, URLs or client options');
    if (nodes.length === 0) throw new RangeError('nodes must name at least one redis master');
    this.#settings = { ...validateSettings(settings, nodes.length, false) };
    const seen = new Map<unknown, number>();
    nodes.forEach((node, index) => {
      if (typeof node !== 'object') return; // URLs are compared by master below
      const twin = seen.get(node);
      if (twin !== undefined) throw new TypeError(`nodes[${index}] is the same client as nodes[${twin}]`);
      seen.set(node, index);
    });
    const graceMs = this.#settings.restartGuard?.graceMs;
    const hooks: HealthHooks = {
      onError: (error) => this.#emit('error', () => error),
      onDown: (event) => this.#emit('nodeDown', () => event),
      onUp: (event) => this.#emit('nodeUp', () => event),
    };
    const built: Voter[] = nodes.map((input, index) => {
      const cluster = clusterConfigOf(input, index);
      const replicas = this.#replicasOf(index);
      return cluster ? new ClusterVoter(cluster, index, hooks, graceMs, replicas) : new RedisNode(input, index, hooks, graceMs, replicas);
    });
    this.#clustered = built.some((node) => node instanceof ClusterVoter);
    const labels = built.map((node) => node.label);
    labels.forEach((label, index) => {
      const twin = labels.indexOf(label);
      if (twin !== index) {
        throw new RangeError(`nodes[${index}] and nodes[${twin}] are the same master ${label}: each vote must be independent`);
      }
    });
    this.#nodes = built;
    this.#labels = labels;
    this.#voters = built.map((node) => node.voter);
    this.#stats = new StatsRecorder(labels);
    this.#notifier = new Notifier(built.map((node) => (listener) => node.subscribeReleases(listener)));
    for (const node of built) node.start();
  }

  /** Acquire `resources` for `ttl` ms on a quorum of masters, retrying as the settings say. */
  acquire(resources: string | readonly string[], ttl: number, settings: FencedSettings): Promise<FencedLock>;
  acquire(resources: string | readonly string[], ttl: number, settings?: CallSettings): Promise<Lock>;
  acquire(resources: string | readonly string[], ttl: number, settings?: CallSettings): Promise<Lock> {
    const keys = normalizeResources(resources);
    return this.#acquire({ kind: 'acquire', keys, lease: EXCLUSIVE }, ttl, settings);
  }

  /**
   * A counting semaphore named `name`: at most `limit` valid permits at any instant (every process
   * must use the same limit for a name). `semaphore(name, limit).acquire(ttl)` resolves to a permit:
   * a Lock with the lock's whole lifetime (extend, release, signal, autoExtend, `await using`).
   */
  semaphore(name: string, limit: number): Semaphore {
    checkName(name);
    return new Semaphore(this.#leaseOwner, name, validateLimit(limit, MAX_PERMITS), this.#clustered);
  }

  /**
   * A read-write lock named `name`: `.read` holds are shared, a `.write` hold is exclusive, and a
   * waiting writer stops new readers. The write hold is `acquire(name)` itself.
   */
  readWrite(name: string): ReadWriteLock {
    checkName(name);
    return new ReadWriteLock(this.#leaseOwner, name);
  }

  readonly #leaseOwner: LeaseOwner = {
    acquireLease: (admission, ttl, settings) => this.#acquire(admission, ttl, settings),
    usingLease: (admission, ttl, settings, routine) => this.#using(admission, ttl, settings, routine),
  };

  /**
   * Acquires under way: quit() lets them end (their sleeps are woken, an attempt on the wire decides
   * within the per-master timeout) and roll back before it closes the connections, so a cancelled
   * acquire leaves nothing on the masters. A count, not a set of promises: one more promise and its
   * reactions per acquire cost 13 µs of CPU per acquire + release in S2.
   */
  #acquiring = 0;
  #acquiresEnded: (() => void) | undefined;

  async #acquire(admission: Admission, ttl: number, settings?: CallSettings): Promise<Lock> {
    const prepared = this.#prepareAcquire(admission, ttl, settings);
    if (prepared instanceof Lock) return prepared;
    const call = prepared;
    const { ttlMs, effective, signal, inLine } = call;
    const { kind, keys } = call.admission;
    this.#stats.acquisitions.attempted++;
    this.#acquiring++;
    try {
      for (let attempt = 1; ; attempt++) {
        this.#assertOpen(); // quit() while waiting ends the wait
        const value = newLockValue();
        const start = this.#attemptStart();
        const ageMs = start.monotonicMs - call.startMs;
        const placeMs = inLine ? this.#masterClock.placeOf(call.startMs) : undefined;
        const acquire: LockOperation = { kind, keys, value, ttlMs, fenced: call.fencing, ticket: inLine, ageMs, placeMs, firstSlot: call.firstSlot };
        const first = await this.#vote(acquire, effective, attempt, start, signal);
        let { record } = first;
        let succeeded = first.vote.reached && record.validityMs > 0;
        if (succeeded && call.fencing) {
          record = await this.#fence(keys, value, ttlMs, first.vote, record, start, effective, signal);
          succeeded = record.fencing!.confirmed >= effective.quorum && record.validityMs > 0;
        }
        // quit() meanwhile: no lock is handed out from a Redlock that can no longer release it.
        const closing = this.#closed;
        if (succeeded && !closing) return this.#handOut(call, acquire, attempt, start, first.vote, record);
        remember(call.attempts, record);
        const exhausted = closing || (effective.retryCount !== -1 && call.retries >= effective.retryCount);
        // Every master, including those that timed out: a delayed SET may still land. Giving up,
        // the ticket leaves the queues too.
        const rollback = this.#runEverywhere({ kind: 'release', keys, value, ttlMs, ticket: exhausted ? inLine : '' }, effective);
        // Masters that gave a permit a later slot saw the earlier ones taken: the next attempt starts there.
        if (kind === 'permit') call.firstSlot = Math.max(0, ...record.outcomes.map((outcome) => outcome.slot ?? 0));
        try {
          if (closing) throw new RedlockClosedError();
          if (exhausted) throw this.#acquireFailure(call, attempt, record);
          await this.#waitAfterRefusal(call, value, record, placeMs === undefined);
        } catch (error) {
          // A failed or cancelled acquire leaves nothing behind: wait for the deletes to land, and
          // take the ticket out of the queues if the rollback did not.
          await rollback;
          if (!exhausted && inLine) await this.#runEverywhere({ kind: 'release', keys, value, ttlMs, ticket: inLine }, effective);
          throw error;
        }
      }
    } catch (error) {
      this.#stats.acquisitions.failed++;
      const durationMs = this.#clock.monotonicMs() - call.startMs;
      this.#emit('failed', () => ({ operation: 'acquire', resources: keys, durationMs, error, attempts: call.attempts }));
      throw error;
    } finally {
      call.waiter?.leave();
      if (--this.#acquiring === 0) this.#acquiresEnded?.();
    }
  }

  /**
   * An acquire's arguments checked (before any network call), and either the lock an enclosing
   * `using()` routine holds them with, re-entered, or the call's state for its attempts.
   */
  #prepareAcquire(admission: Admission, ttl: number, settings: CallSettings | undefined): Lock | AcquireCall {
    const { kind, keys } = admission;
    const ttlMs = validateTtl(ttl);
    const { signal, autoExtend, fencing, ...callSettings } = validateSettings(settings, this.#nodes.length, true);
    if (fencing && kind !== 'acquire') {
      throw new TypeError(
        `fencing tokens order exclusive holders, and ${admission.description ?? 'this'} is not one: acquire a lock or a write hold with { fencing: true }`,
      );
    }
    const effective = resolveSettings(this.#settings, callSettings, this.#nodes.length, ttlMs);
    if (autoExtend) validateAutoExtension(ttlMs, effective);
    if (this.#clustered) {
      const problem = clusterKeysProblem(keys);
      if (problem) throw problem;
    }
    this.#assertOpen();
    signal?.throwIfAborted();
    // A routine holding the resources exclusively re-enters them (a writer may also read), one
    // holding them to read re-enters them to read again; a permit is always another permit.
    const outer = effective.reentrant && kind !== 'permit' ? this.#scope.heldFor(keys, kind === 'read') : undefined;
    if (outer) {
      if (fencing && outer.fencingToken === undefined) {
        throw new TypeError(
          `acquire of ${formatResources(keys)} with fencing re-enters a lock acquired without it, which has no fencing token; ` +
            'acquire the outer lock with { fencing: true }',
        );
      }
      this.#stats.acquisitions.reentered++;
      return Lock.viewOf(this, outer, keys);
    }
    // This call's ticket in the keys' queues on the masters, kept across its attempts (waiting.ts),
    // placed at when it began on the masters' clock (master-clock.ts). Only exclusive holders wait
    // in line there; a reader or a permit's ticket names its waiter here.
    const ticket = newTicket(ticketTtlOf(effective));
    return {
      admission,
      ttlMs,
      effective,
      callSettings,
      signal,
      autoExtend,
      fencing: fencing === true,
      startMs: this.#clock.monotonicMs(),
      ticket,
      inLine: kind === 'acquire' ? ticket : '',
      attempts: [],
      retries: 0,
      // Retries used up. A retry woken by a release costs none while the acquire has waited no longer
      // than its retries could have (retryCount × the longest sleep): a release wakes a waiter long
      // before retryDelay, and a waiter that then loses the race (a semaphore's permits have no line)
      // would otherwise burn its retries in a few ms.
      patienceMs: effective.retryCount * (effective.retryDelayMs + effective.retryJitterMs),
      firstSlot: 0,
      waiter: undefined,
    };
  }

  /** A granted attempt becomes the caller's Lock (a permit: on the slot a quorum gave it). */
  #handOut(call: AcquireCall, acquire: LockOperation, attempt: number, start: AttemptStart, vote: FanOutResult, record: AttemptRecord): Lock {
    const { ttlMs, effective } = call;
    const { keys } = call.admission;
    const token = record.fencing?.token;
    const expiration = expirationMs(start.epochMs, ttlMs, effective.driftFactor);
    let held = keys;
    let lease = call.admission.lease;
    if (lease.type === 'permit') {
      const slot = vote.slot!;
      held = [keys[slot]!];
      lease = { ...lease, slot };
      this.#dropOtherSlots(acquire, slot, vote, effective);
    }
    const lock = this.#newLock(held, acquire.value, call.inLine, expiration, attempt, ttlMs, call.callSettings, effective, call.autoExtend, token, lease);
    const waitMs = lock.acquiredAtMs - call.startMs;
    this.#stats.acquired(waitMs);
    this.#emit('acquired', () => ({ lock, resources: held, attempts: attempt, waitMs, attempt: record }));
    return lock;
  }

  /** The error an acquire that used up its retries fails with: refused by a quorum, or not. */
  #acquireFailure(call: AcquireCall, attempt: number, record: AttemptRecord): Error {
    const { admission, effective } = call;
    const { keys } = admission;
    const refused = record.outcomes.filter((outcome) => outcome.status === 'locked' || outcome.status === 'queued').length;
    const Failure = refused > this.#nodes.length - effective.quorum ? ResourceLockedError : ExecutionError;
    return new Failure(acquireFailure(admission.description ?? formatResources(keys), attempt, effective, record), keys, call.attempts);
  }

  /**
   * After a refused attempt (`value` its lock value): wait in line until woken (a release, our turn)
   * or the retry timer, counting the retry unless a release woke it within the call's patience.
   * `unplaced`: the ticket has no place on the masters' clock yet (the first reading gives it one).
   */
  async #waitAfterRefusal(call: AcquireCall, value: string, record: AttemptRecord, unplaced: boolean): Promise<void> {
    const { ticket, effective, signal } = call;
    const { kind, keys } = call.admission;
    if (call.inLine && this.#masterClock.stale) this.#readMasterClocks(keys, ticket, call.startMs, unplaced, effective);
    const waiter = (call.waiter ??= this.#notifier.register(keys, ticket, call.startMs, kind === 'read'));
    waiter.ownValue = value;
    const wokenBy = await waiter.sleep(waitMs(record, effective), signal, this.#closing.signal);
    if ((wokenBy !== 'turn' && wokenBy !== 'released') || this.#clock.monotonicMs() - call.startMs > call.patienceMs) call.retries++;
    // A release with nobody in line woke the oldest waiter of every process: a random pause of
    // up to two of our attempts' durations keeps them from all asking at once and splitting
    // the votes. (Named first in line, it goes at once.)
    if (wokenBy === 'released' || wokenBy === 'subscribed') {
      await sleep(Math.random() * Math.min(2 * record.elapsedMs, effective.retryJitterMs), signal, this.#closing.signal);
    }
  }


  /**
   * A fenced acquire's second round. The first round's granting masters each incremented their
   * counters; the token is the largest they answered. Raising the counters to it on a quorum of the
   * masters that hold the lock means any later quorum includes one of them, whose increment then
   * answers more than this token (docs/safety.md, "Fencing tokens"). Validity counts both rounds, from
   * round one's start.
   */
  async #fence(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    vote: FanOutResult,
    record: AttemptRecord,
    start: AttemptStart,
    effective: EffectiveSettings,
    signal: AbortSignal | undefined,
  ): Promise<AttemptRecord> {
    const token = Math.max(...vote.outcomes.map((outcome) => (outcome.status === 'granted' ? (outcome.fence ?? 0) : 0)));
    const fence: LockOperation = { kind: 'fence', keys, value, ttlMs, token };
    const second = await this.#fanOut(fence, effective, { signal });
    const elapsedMs = this.#clock.monotonicMs() - start.monotonicMs;
    const fields = {
      attempt: record.attempt,
      outcomes: record.outcomes,
      granted: record.granted,
      elapsedMs,
      validityMs: validityMs(fence.ttlMs, elapsedMs, effective.driftFactor),
      fencing: { token, confirmed: second.granted, outcomes: second.outcomes },
    };
    return attemptRecord(fields, this.#voters, effective.quorum, keys);
  }

  #newLock(
    keys: readonly string[],
    value: string,
    ticket: string,
    expiration: number,
    attempt: number,
    ttlMs: number,
    callSettings: Partial<Settings>,
    effective: EffectiveSettings,
    autoExtend: boolean | undefined,
    fencingToken: number | undefined,
    lease: LeaseKind,
  ): Lock {
    const lock = new Lock(this, keys, value, expiration, attempt, ttlMs, callSettings, fencingToken, undefined, effective.quorum, ticket, lease);
    lock.acquiredAtMs = this.#clock.monotonicMs();
    if (autoExtend) {
      lock.keepAlive({
        ttlMs,
        thresholdMs: effective.automaticExtensionThresholdMs,
        extend: (held, ttl, onFailedAttempt) => this.#extend(held, ttl, onFailedAttempt),
        scheduler: this.#renewals,
      });
    }
    return lock;
  }

  /**
   * Extend `lock` to `ttl` ms from now on a quorum of the masters that still hold it. Validity is
   * recomputed from this extend's own start. Retries failed attempts while the lock is valid.
   */
  async extend<L extends Lock>(lock: L, ttl: number): Promise<L> {
    if (lock instanceof Lock && lock.reentered) return lock.extend(ttl);
    await this.#extend(lock, ttl); // resolves to `lock` itself, its expiration moved
    return lock;
  }

  /**
   * `onFailedAttempt` lets a lock's Lifetime keep the outcomes for its LockLostError. Extends of one
   * lock run one at a time, so one that lowered the expiration is decided before another raises it.
   */
  async #extend(lock: Lock, ttl: number, onFailedAttempt?: (record: AttemptRecord) => void): Promise<Lock> {
    if (!(lock instanceof Lock)) throw new TypeError('extend needs a Lock returned by acquire');
    const ttlMs = validateTtl(ttl);
    const effective = resolveSettings(this.#settings, lock.callSettings, this.#nodes.length, ttlMs);
    this.#assertOpen();
    return lock.queueExtend(() => this.#extendNow(lock, ttlMs, effective, onFailedAttempt));
  }

  async #extendNow(
    lock: Lock,
    ttlMs: number,
    effective: EffectiveSettings,
    onFailedAttempt: ((record: AttemptRecord) => void) | undefined,
  ): Promise<Lock> {
    const startMs = this.#clock.monotonicMs();
    const attempts: AttemptRecord[] = [];
    const automatic = onFailedAttempt !== undefined;
    try {
      const record = await this.#extendAttempts(lock, ttlMs, effective, attempts, onFailedAttempt);
      this.#stats.extensions.succeeded++;
      if (automatic) this.#stats.extensions.automatic++;
      const durationMs = this.#clock.monotonicMs() - startMs;
      this.#emit('extended', () => ({ lock, resources: lock.resources, automatic, durationMs, attempt: record }));
      return lock;
    } catch (error) {
      this.#stats.extensions.failed++;
      const durationMs = this.#clock.monotonicMs() - startMs;
      this.#emit('failed', () => ({ operation: 'extend', lock, resources: lock.resources, durationMs, error, attempts }));
      throw error;
    }
  }

  async #extendAttempts(
    lock: Lock,
    ttlMs: number,
    effective: EffectiveSettings,
    attempts: AttemptRecord[],
    onFailedAttempt: ((record: AttemptRecord) => void) | undefined,
  ): Promise<AttemptRecord> {
    for (let attempt = 1; ; attempt++) {
      this.#assertOpen();
      // Released while this extend slept between attempts (or before it began): nothing more is sent.
      if (lock.released) throw new LockReleasedError(lock.resources);
      if (this.#clock.epochMs() >= lock.expiration) {
        if (attempt === 1) throw new LockExpiredError(lock.resources, lock.expiration);
        throw new ExecutionError(
          `could not extend the lock on ${formatResources(lock.resources)} before it expired (${attempt - 1} attempts)`,
          lock.resources,
          attempts,
        );
      }
      const extend: LockOperation = { kind: 'extend', keys: lock.resources, value: lock.value, ttlMs };
      const start = this.#attemptStart();
      const expiration = expirationMs(start.epochMs, ttlMs, effective.driftFactor);
      // Sent, this extend may run on a master even if it fails here (an answer that times out, a
      // command that waits behind a paused master) and, with a ttl below the keys' remaining one,
      // shorten them: so the lock is valid only as long as it would leave, until it succeeds.
      lock.lowerExpiration(expiration);
      const { vote, record } = await this.#vote(extend, effective, attempt, start);
      if (vote.reached && record.validityMs > 0) {
        // A lock released or lost meanwhile (its lowered validity ran out) stays so.
        if (!lock.extendedTo(expiration, ttlMs)) {
          throw lock.released ? new LockReleasedError(lock.resources) : new LockExpiredError(lock.resources, lock.expiration);
        }
        return record;
      }
      remember(attempts, record);
      onFailedAttempt?.(record);
      const lost = vote.outcomes.filter((outcome) => outcome.status === 'lost').length;
      if (this.#nodes.length - lost < effective.quorum) {
        const error = new ExecutionError(
          `lock on ${formatResources(lock.resources)} is lost: ${lost} of ${this.#nodes.length} masters no longer hold it, ` +
            `so a quorum of ${effective.quorum} is impossible`,
          lock.resources,
          attempts,
        );
        // Another client can be granted it now: the lock ends here, whoever asked for the extend.
        lock.lose(new LockLostError(lock.resources, error.message, attempts, error));
        throw error;
      }
      if (effective.retryCount !== -1 && attempt > effective.retryCount) {
        throw new ExecutionError(
          `could not extend the lock on ${formatResources(lock.resources)}: ${describeVote(record, effective)}`,
          lock.resources,
          attempts,
        );
      }
      // Never sleep through the last chance: at most half of the validity that is left.
      await sleep(Math.min(fallbackDelayMs(effective), Math.max(0, (lock.expiration - this.#clock.epochMs()) / 2)), this.#closing.signal);
    }
  }

  /**
   * Compare-and-delete on every master. Resolves once a quorum deleted (or could not), and keeps
   * delivering to the rest in the background. Releasing an expired lock resolves with `released: false`.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    if (!(lock instanceof Lock)) throw new TypeError('release needs a Lock returned by acquire');
    if (lock.reentered) return lock.release();
    // Releasing again answers with the first release's result: one release, one event.
    return lock.releaseOnce(() => this.#release(lock));
  }

  async #release(lock: Lock): Promise<ReleaseResult> {
    this.#assertOpen();
    if (!lock.released && this.#clock.epochMs() >= lock.expiration) {
      this.lost(lock, new LockLostError(lock.resources, 'its validity ended before it was released', []));
    }
    lock.markReleased();
    const startMs = this.#clock.monotonicMs();
    const heldMs = startMs - lock.acquiredAtMs;
    if (lock.end()) this.#stats.ended(heldMs);
    const effective = resolveSettings(this.#settings, lock.callSettings, this.#nodes.length, lock.ttlMs);
    // Its ticket leaves the queues: it stayed first in line where it waited before its grant.
    const release: LockOperation = { kind: 'release', keys: lock.resources, value: lock.value, ttlMs: lock.ttlMs, ticket: lock.ticket };
    const vote = await this.#fanOut(release, effective);
    this.#stats.releases++;
    const result: ReleaseResult = { released: vote.reached, heldBy: vote.granted, outcomes: vote.outcomes };
    const durationMs = this.#clock.monotonicMs() - startMs;
    this.#emit('released', () => ({ lock, resources: lock.resources, heldMs, durationMs, ...result }));
    return result;
  }

  /** @internal a lock's lifetime reports its loss (once); also a release after validity ended. */
  lost(lock: Lock, error: LockLostError): void {
    if (!lock.end()) return;
    const heldMs = this.#clock.monotonicMs() - lock.acquiredAtMs;
    this.#stats.losses++;
    this.#stats.ended(heldMs);
    this.#emit('lost', () => ({ lock, resources: lock.resources, heldMs, error }));
  }

  /** Counts and percentiles since this Redlock was created; see `RedlockStats`. */
  stats(): RedlockStats {
    return this.#stats.snapshot();
  }

  /**
   * Run `routine(signal, lock)` while holding `resources`, extending the lock automatically before
   * its validity falls below `automaticExtensionThreshold` (with these settings). `signal` aborts
   * with a `LockLostError` if the lock is lost. Resolves to the routine's result (with
   * `{ onLost: 'reject' }`, rejects with that LockLostError instead if the lock was lost meanwhile), or
   * rejects with the routine's error; the lock is released on every path, and a release problem never
   * hides the routine's outcome.
   */
  using<T>(resources: string | readonly string[], ttl: number, routine: Routine<T>): Promise<T>;
  using<T>(resources: string | readonly string[], ttl: number, settings: UsingSettings & FencedSettings, routine: Routine<T, FencedLock>): Promise<T>;
  using<T>(resources: string | readonly string[], ttl: number, settings: UsingSettings, routine: Routine<T>): Promise<T>;
  async using<T>(
    resources: string | readonly string[],
    ttl: number,
    settingsOrRoutine: UsingSettings | Routine<T, FencedLock>,
    maybeRoutine?: Routine<T, FencedLock>,
  ): Promise<T> {
    const [settings, routine] = splitUsing(settingsOrRoutine, maybeRoutine, 'using(resources, ttl, [settings,] (signal, lock) => …)');
    const keys = normalizeResources(resources);
    return this.#using({ kind: 'acquire', keys, lease: EXCLUSIVE }, ttl, settings, routine);
  }

  /** `routine` gets a FencedLock when the settings ask for fencing (the overloads' promise). */
  async #using<T>(admission: Admission, ttl: number, settings: UsingSettings | undefined, routine: Routine<T, FencedLock>): Promise<T> {
    const { onLost = 'resolve', ...callSettings } = settings ?? {};
    if (onLost !== 'resolve' && onLost !== 'reject') throw new TypeError(`onLost must be 'resolve' or 'reject', got ${describe(onLost)}`);
    const lock = await this.#acquire(admission, ttl, { ...callSettings, autoExtend: true });
    try {
      let result: T;
      // The routine's async chain is a reentrancy scope: nested calls see what it holds, exclusively
      // or to read (lease/reentrancy.ts says who may re-enter what).
      if (lock.lease.type === 'permit') {
        result = await routine(lock.signal, lock as FencedLock);
      } else {
        result = await this.#scope.run(lock, () => routine(lock.signal, lock as FencedLock));
      }
      const lost: unknown = lock.signal.reason;
      if (onLost === 'reject' && lost instanceof LockLostError) throw lost.withResult(result);
      return result;
    } finally {
      // A lost lock is released in the background: the outcome is known and should not wait.
      // It rejects only when this Redlock was quit meanwhile; the routine's outcome stands regardless.
      const release = lock.release().catch(() => undefined);
      if (!lock.signal.aborted) await release;
    }
  }

  /** Close the clients we created (yours stay open) and stop listening to yours. */
  async quit(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort(new RedlockClosedError());
    this.#renewals.closed = true;
    for (const lifetime of this.#renewals.scheduled) lifetime.abandon('the Redlock was quit, so it is no longer extended');
    if (this.#acquiring > 0) await new Promise<void>((resolve) => (this.#acquiresEnded = resolve));
    await this.#notifier.close();
    await Promise.all(this.#nodes.map((node) => node.close()));
  }

  /**
   * Each master's health, in the order given: up / down / suspect (stalled), since when, the latest
   * failure with its cause and how many there were, and recent round trips. Transitions are also
   * the `nodeDown` and `nodeUp` events.
   */
  health(): MasterHealth[] {
    return this.#nodes.map((node) => node.health());
  }

  /**
   * What each master holds for each of `resources` now (holder, PTTL, fence counter, waiters), and
   * whether a quorum holds it and until when at the latest. Read-only; each master's answer is
   * bounded by the per-master timeout (a master that gives none is `unavailable`). See inspect.ts.
   */
  async inspect(resources: string | readonly string[], options?: InspectOptions): Promise<ResourceInspection[]> {
    const { keys, settings } = this.#operatorCall(resources, options);
    return inspectOn(this.#nodes, keys, this.#settings.quorum, settings);
  }

  /**
   * For an operator clearing a stuck lock: delete each of `resources` on every master whatever
   * holds it (a lock's value, a permit, read holds) and announce the release, so waiters wake. The
   * fence counter and the wait queue stay. A holder still alive is not told: it goes on believing
   * it holds the lock while another acquires it, so mutual exclusion is broken until it notices
   * (an extend fails) — use it for holders known dead. With `expected` (this Redlock's `inspect()`
   * of them), each master deletes only the holders that inspection showed there.
   */
  async forceRelease(resources: string | readonly string[], options?: ForceReleaseOptions): Promise<ForceReleaseResult[]> {
    const { keys, settings } = this.#operatorCall(resources, options, ['expected']);
    const expected = options?.expected === undefined ? undefined : expectedFingerprints(options.expected, keys, this.#labels);
    return forceReleaseOn(this.#nodes, keys, settings, expected);
  }

  /** An inspection's or force release's arguments, checked before any network call (each resource is one operation). */
  #operatorCall(
    resources: string | readonly string[],
    options: InspectOptions | undefined,
    extra: readonly string[] = [],
  ): { keys: string[]; settings: OperatorCall } {
    const keys = normalizeResources(resources);
    if (this.#clustered) {
      for (const key of keys) {
        const problem = clusterKeysProblem([key]);
        if (problem) throw problem;
      }
    }
    const settings = { ...operatorSettings(options, this.#settings.nodeTimeout, extra), batching: this.#settings.batching ?? true };
    this.#assertOpen();
    settings.signal?.throwIfAborted();
    return { keys, settings };
  }

  /** The masters, as `host:port`, in the order given. */
  get nodes(): readonly string[] {
    return this.#labels;
  }

  #attemptStart(): AttemptStart {
    return { monotonicMs: this.#clock.monotonicMs(), epochMs: this.#clock.epochMs() };
  }

  async #vote(
    operation: LockOperation,
    effective: EffectiveSettings,
    attempt: number,
    start: AttemptStart,
    signal?: AbortSignal,
  ): Promise<{ vote: FanOutResult; record: AttemptRecord }> {
    const vote = await this.#fanOut(operation, effective, { signal });
    const elapsedMs = this.#clock.monotonicMs() - start.monotonicMs;
    const fields = {
      attempt,
      outcomes: vote.outcomes,
      elapsedMs,
      validityMs: validityMs(operation.ttlMs, elapsedMs, effective.driftFactor),
      granted: vote.granted,
      slot: vote.slot,
    };
    return { vote, record: attemptRecord(fields, this.#voters, effective.quorum, operation.keys) };
  }

  /**
   * The first wait of this process, or the first in a while: read the masters' clocks in the
   * background (the waiter sleeps meanwhile), so tickets get the place every master agrees on
   * (master-clock.ts). A ticket that was `unplaced` (each master placed it by its own clock) is then
   * given that place where it stands in line: a 'clock' operation with the ticket, not an attempt.
   */
  #readMasterClocks(keys: readonly string[], ticket: string, startMs: number, unplaced: boolean, effective: EffectiveSettings): void {
    const value = newLockValue();
    const reading = this.#masterClock.sample(async () => {
      const offsets: number[] = [];
      const read: NodeOperation<OperationReply> = (index, cancellation) => {
        const sentMs = this.#clock.monotonicMs();
        return this.#nodes[index]!.submit({ kind: 'clock', keys: [keys[0]!], value, ttlMs: 0 }, cancellation, effective.batching).then((reply) => {
          // The master's TIME against the midpoint of the round trip on our monotonic clock.
          if (reply.status === 1) offsets.push(reply.detail - (sentMs + this.#clock.monotonicMs()) / 2);
          return reply;
        });
      };
      await fanOut(this.#labels, read, { quorum: effective.quorum, timeoutMs: effective.nodeTimeoutMs, waitForAll: true }, judgeHeld);
      return offsets;
    });
    if (!unplaced) return;
    reading
      .then(() => {
        const placeMs = this.#masterClock.placeOf(startMs);
        if (placeMs === undefined || this.#closed) return;
        return this.#runEverywhere({ kind: 'clock', keys, value, ttlMs: 0, ticket, placeMs }, effective);
      })
      .catch(() => undefined); // best effort: the next attempt gives the place anyway
  }

  /** Send an operation to every master and wait until each answered or timed out. */
  async #runEverywhere(operation: LockOperation, effective: EffectiveSettings): Promise<void> {
    await this.#fanOut(operation, effective, { waitForAll: true });
  }

  /**
   * A permit holds slot `slot` on a quorum. Every master that did not give it this slot or refuse it
   * (another slot; no answer yet, whose grant may still land; an error, which may follow a write)
   * releases the other slots of this value, in the background, best effort: a slot held for nobody
   * would otherwise wait out the ttl.
   */
  #dropOtherSlots(acquire: LockOperation, slot: number, vote: FanOutResult, effective: EffectiveSettings): void {
    const others = acquire.keys.filter((_, index) => index !== slot);
    if (others.length === 0) return;
    const release: LockOperation = { kind: 'release', keys: others, value: acquire.value, ttlMs: acquire.ttlMs, ticket: '' };
    vote.outcomes.forEach((outcome, index) => {
      // An error may follow a write (an unreplicated grant, a connection reset after the SET).
      if (outcome.status === 'locked' || (outcome.status === 'granted' && outcome.slot === slot)) return;
      this.#nodes[index]!.submit(release, new Cancellation(), effective.batching).catch(() => undefined);
    });
  }

  /** `operation` on every master, each reply read as its answer (the one fan-out of every call). */
  #fanOut(operation: LockOperation, effective: EffectiveSettings, options?: Pick<FanOutOptions, 'signal' | 'waitForAll'>): Promise<FanOutResult> {
    // With `replicas`, a grant's WAIT blocks at most a third of this call's per-master timeout
    // (voters/master/script-call.ts): Redis ends a WAIT on its clock tick, up to ~100 ms late (hz 10), and the answer
    // should still come before the master times out.
    const sent = this.#settings.replicas ? { ...operation, replicationTimeoutMs: Math.max(1, Math.floor(effective.nodeTimeoutMs / 3)) } : operation;
    let submit: NodeOperation<OperationReply> = (index, cancellation) => this.#nodes[index]!.submit(sent, cancellation, effective.batching);
    if (operation.kind === 'release' && this.#notifier.waiting) {
      // A release's reply names who is first in line now: one of ours is woken without waiting for
      // the announcement on its subscription (which may still be connecting).
      const plain = submit;
      const released = operation.ticket || operation.value; // as the script announces it
      submit = (index, cancellation) => plain(index, cancellation).then((reply) => {
        if (reply.head !== undefined) this.#notifier.turn(reply.head, released, index);
        return reply;
      });
    }
    const settings = { quorum: effective.quorum, timeoutMs: effective.nodeTimeoutMs, onAnswer: this.#stats.answer, ...options };
    return fanOut(this.#labels, submit, settings, judgeOf(operation));
  }

  #assertOpen(): void {
    if (this.#closed) throw new RedlockClosedError();
  }

  /**
   * Emit an event and publish it on its diagnostics channel, building the payload only if someone
   * listens. With no listener an 'error' event would crash the process, so none is emitted then
   * (master errors are also in the outcomes). A listener runs inside an acquire, extend, release or
   * a connection's handler: its throw must change no call's outcome (an acquire that rejected would
   * leave its lock held, and auto-extended, by a Lock no one has) nor keep the later listeners from
   * the event. So each listener is called on its own, and its throw is reported as Node reports a
   * diagnostics_channel subscriber's or an EventTarget listener's: an uncaught exception on the
   * next tick (observe.ts). publish() already does that for subscribers.
   */
  #emit<E extends keyof RedlockEvents>(event: E, payload: () => RedlockEvents[E][0]): void {
    const channel = channels[event];
    // A copy: a `once` listener removes itself while called, and a listener may add or remove others.
    const listeners = this.rawListeners(event) as Array<(this: this, payload: RedlockEvents[E][0]) => unknown>;
    if (listeners.length === 0 && !channel.hasSubscribers) return;
    const built = payload();
    if (channel.hasSubscribers) channel.publish(built);
    for (const listener of listeners) {
      try {
        listener.call(this, built);
      } catch (error) {
        reportListenerError(error);
      }
    }
  }

}
