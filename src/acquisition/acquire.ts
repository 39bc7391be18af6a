/**
 * Acquire: attempts on every master until a quorum grants within the validity, or the retries are
 * used up. Between attempts the call waits in line (wait.ts); a refused or failed attempt is rolled
 * back on every master, so nothing is left behind. What is admitted is the admission's business
 * (admission.ts): the exclusive acquire, or a primitive's rule.
 */
import { AuthenticationError, ExecutionError, RedlockClosedError, ResourceLockedError, ScriptingUnavailableError, formatResources } from '../errors.js';
import { isRefusal, refuses, type AttemptRecord } from '../protocol/outcomes.js';
import { resolveSettings, validateAutoExtension, type CallSettings, type EffectiveSettings, type Optional, type Settings } from '../config/settings.js';
import { validateSettings, validateTtl } from '../config/validation.js';
import { Lock } from '../lease/lock.js';
import { newLockValue } from '../lease/values.js';
import type { FanOutResult } from '../protocol/fan-out.js';
import { expirationMs } from '../protocol/validity.js';
import { newTicket, type AcquireOperation, type AdmitOperation, type LockOperation } from '../script/codec.js';
import { clusterKeysProblem } from '../voters/cluster/slots.js';
import type { Admission } from './admission.js';
import { assertOpen, type CallContext } from './context.js';
import { acquireFailure, credentialsFailure, credentialsRefused, remember, scriptingFailure, scriptingRefused } from './failure.js';
import { fenceRound } from './fence.js';
import type { AttemptStart } from './masters.js';
import { ticketTtlOf } from './retry.js';
import { dropSpareGroups, waitAfterRefusal, waiterOf, type WaitingCall } from './wait.js';

/** One acquire call's state across its attempts. */
export interface AcquireCall extends WaitingCall {
  readonly ttlMs: number;
  readonly callSettings: Optional<Settings>;
  readonly autoExtend: boolean | undefined;
  readonly fencing: boolean;
  readonly attempts: AttemptRecord[];
  /** A grouped rule's group (a permit's slot) the next attempt tries first. */
  from: number;
}

/** How a granted lock is extended by its lifetime (extend.ts). */
export type Extender = (lock: Lock, ttl: number, onFailedAttempt: (record: AttemptRecord) => void) => Promise<unknown>;

/**
 * The acquires of one Redlock. quit() waits for those under way (drained()) before it closes the
 * connections: their sleeps are woken, an attempt on the wire decides within the per-master
 * timeout, and each rolls back, so a cancelled acquire leaves nothing on the masters. A count, not
 * a set of promises: a promise per acquire would cost every acquire its reactions.
 */
export class Acquisitions {
  #underWay = 0;
  #drained: (() => void) | undefined;
  /**
   * Whether a waiter may hold by hand-offs (issue 40): not with `replicas`, whose grants count only
   * once replicated (a hand-off is not; such a waiter is named, and its next attempt is granted).
   */
  readonly #handOffs: boolean;

  constructor(
    private readonly context: CallContext,
    private readonly extend: Extender,
  ) {
    const { replicas } = context.settings;
    this.#handOffs = !(typeof replicas === 'number' ? replicas > 0 : (replicas ?? []).some((count) => count > 0));
  }

  /** Resolves once no acquire is under way. */
  drained(): Promise<void> {
    if (this.#underWay === 0) return Promise.resolve();
    return new Promise<void>((resolve) => (this.#drained = resolve));
  }

  async acquire(admission: Admission, ttl: number, settings?: CallSettings): Promise<Lock> {
    const prepared = this.#prepare(admission, ttl, settings);
    if (prepared instanceof Lock) return prepared;
    const call = prepared;
    const { context } = this;
    const { stats, clock, masters } = context;
    const { effective, signal } = call;
    stats.acquisitions.attempted++;
    this.#underWay++;
    try {
      for (let attempt = 1; ; attempt++) {
        assertOpen(context); // quit() while waiting ends the wait
        call.waiter?.expect(undefined); // hand-offs of an earlier attempt's value count no more
        const start = masters.startOfAttempt();
        const acquire = this.#operation(call, start);
        // The hot path awaits the vote here, in this loop: an async helper per attempt would cost
        // one more promise per acquire. Only a refusal goes on to #afterRefusal.
        const vote = await masters.fanOut(acquire, effective, signal && { signal });
        let record = masters.attemptRecord(vote, call.ttlMs, effective, attempt, start, acquire.keys);
        let succeeded = vote.reached && record.validityMs > 0;
        if (succeeded && acquire.kind === 'acquire' && acquire.fenced) {
          record = await fenceRound(context, acquire, vote, record, start, effective, signal);
          succeeded = record.fencing!.confirmed >= effective.quorum && record.validityMs > 0;
        }
        // quit() meanwhile: no lock is handed out from a Redlock that can no longer release it.
        const closing = context.closing.aborted;
        if (succeeded && !closing) return this.#handOut(call, acquire, attempt, start, vote, record);
        const handed = await this.#afterRefusal(call, acquire, attempt, start, record, closing, vote);
        if (handed) return handed;
      }
    } catch (error) {
      stats.acquisitions.failed++;
      const durationMs = clock.monotonicMs() - call.startMs;
      const resources = admission.keys;
      context.emit('failed', () => ({ operation: 'acquire', resources, durationMs, error, attempts: call.attempts }));
      throw error;
    } finally {
      call.waiter?.leave();
      if (--this.#underWay === 0) this.#drained?.();
    }
  }

  /** An attempt's operation: a new lock value, and (in line) the ticket's age and place on the masters' clock. */
  #operation(call: AcquireCall, start: AttemptStart): AcquireOperation | AdmitOperation {
    const { ttlMs, inLine, admission } = call;
    const { keys, rule } = admission;
    const value = newLockValue();
    const ageMs = start.monotonicMs - call.startMs;
    const placeMs = inLine ? this.context.masterClock.placeOf(call.startMs) : undefined;
    // A refused reader or racing permit marks the keys' queues with its ticket (a release is
    // announced only where a queue is); a fair permit stands in the semaphore's line with it.
    if (rule) return { kind: 'admit', rule, keys, value, ttlMs, from: call.from, ticket: call.ticket, ageMs, placeMs };
    return { kind: 'acquire', keys, value, ttlMs, fenced: call.fencing, ticket: inLine, ageMs, placeMs };
  }

  /**
   * A refused attempt (or one granted as quit() came): rolled back on every master, then the
   * wait for the next attempt; or, out of retries or quit, the rollback awaited and the error.
   * A lone key in line may be handed to it meanwhile: the lock, if a majority did (#handedOut).
   */
  async #afterRefusal(
    call: AcquireCall,
    acquire: AcquireOperation | AdmitOperation,
    attempt: number,
    start: AttemptStart,
    record: AttemptRecord,
    closing: boolean,
    vote: FanOutResult,
  ): Promise<Lock | undefined> {
    const { context } = this;
    const { effective, admission } = call;
    const { keys, value } = acquire;
    remember(call.attempts, record);
    // Credentials, or scripting, a quorum's worth of masters refused: no retry makes them right.
    const hopeless = credentialsRefused(record, context.masters.count, effective.quorum) ?? scriptingRefused(record, context.masters.count, effective.quorum);
    const exhausted = closing || hopeless !== undefined || (effective.retryCount !== -1 && call.retries >= effective.retryCount);
    // Issue 40: an unfenced lone key in line may be handed to its waiter. Its rollback keeps the
    // key where it is the attempt's and nobody is ahead in line (rollback.lua); the waiter counts
    // those and the masters' hand-offs of this attempt's value, from before the rollback leaves.
    const handing = !exhausted && this.#handOffs && acquire.kind === 'acquire' && !acquire.fenced && keys.length === 1 && call.inLine !== '';
    if (handing) waiterOf(context, call).expect(value, 2 * record.elapsedMs + 1);
    // Every master but those that refused the attempt (its script ran there and wrote nothing),
    // including those that timed out: a delayed SET may still land. One that had not answered at
    // the decision, once it has: unless it refused too (usually, in line: the refusals of a majority
    // decide before the rest answer). Giving up, every master: the ticket leaves the queues too (a
    // reader's or a permit's marks with it).
    const rollbackOf: LockOperation = handing
      ? { kind: 'release', keys, value, ticket: call.ticket, keep: true, ttlMs: call.ttlMs, ageMs: acquire.ageMs, placeMs: acquire.placeMs }
      : { kind: 'release', keys, value, ticket: exhausted ? call.ticket : '' };
    const rollback = exhausted ? context.masters.everywhere(rollbackOf, effective) : this.#rollBack(rollbackOf, effective, vote);
    // Masters that gave a grouped rule a later group saw the earlier ones taken: the next attempt starts there.
    if (admission.rule?.grouped) call.from = Math.max(0, ...record.outcomes.map((outcome) => outcome.slot ?? 0));
    try {
      if (closing) throw new RedlockClosedError();
      if (exhausted) throw this.#failure(call, attempt, record);
      // Unplaced: the attempt went without a place on the masters' clock (the first reading gives it one).
      const wokenBy = await waitAfterRefusal(context, call, value, record, acquire.placeMs === undefined);
      return wokenBy === 'handed' ? this.#handedOut(call, acquire, attempt, start, record) : undefined;
    } catch (error) {
      // A failed or cancelled acquire leaves nothing behind: wait for the deletes to land, and
      // take the ticket out of the queues if the rollback did not.
      await rollback;
      if (!exhausted) await context.masters.everywhere({ kind: 'release', keys, value, ticket: call.ticket }, effective);
      throw error;
    }
  }

  /**
   * A refused attempt's rollback: at once where a master granted, failed or timed out; where one had
   * not answered at the decision, once it answered (or timed out), unless it refused.
   */
  #rollBack(rollback: LockOperation, effective: EffectiveSettings, vote: FanOutResult): Promise<unknown> {
    const { masters } = this.context;
    const now: number[] = [];
    const later: number[] = [];
    // The fan-out's own outcomes: an answer after the decision is recorded on them (`late`).
    vote.outcomes.forEach((outcome, index) => {
      if (outcome.status === 'pending') later.push(index);
      else if (!isRefusal(outcome)) now.push(index);
    });
    const rolledBack = masters.everywhere(rollback, effective, now);
    if (later.length === 0) return rolledBack;
    const settled = vote.round?.settled() ?? Promise.resolve();
    const afterAnswers = settled.then(() => masters.everywhere(rollback, effective, later.filter((index) => !refuses(vote.outcomes[index]!.late))));
    return Promise.all([rolledBack, afterAnswers]);
  }

  /**
   * An acquire's arguments checked (before any network call), and either the lock an enclosing
   * `using()` routine holds them with, re-entered, or the call's state for its attempts.
   */
  #prepare(admission: Admission, ttl: number, settings: CallSettings | undefined): Lock | AcquireCall {
    const { context } = this;
    const { keys, rule } = admission;
    const ttlMs = validateTtl(ttl);
    const { signal, autoExtend, fencing, ...callSettings } = validateSettings(settings, context.masters.count, true);
    if (fencing && rule) {
      throw new TypeError(
        `fencing tokens order exclusive holders, and ${admission.description ?? 'this'} is not one: acquire a lock or a write hold with { fencing: true }`,
      );
    }
    const effective = resolveSettings(context.settings, callSettings, context.masters.count, ttlMs);
    if (autoExtend) validateAutoExtension(ttlMs, effective);
    if (context.clustered) {
      const problem = clusterKeysProblem(keys);
      if (problem) throw problem;
    }
    assertOpen(context);
    signal?.throwIfAborted();
    const outer = this.#reentered(admission, effective, fencing === true);
    if (outer) return outer;
    // This call's ticket in the keys' queues on the masters, kept across its attempts (waiting.ts),
    // placed at when it began on the masters' clock (master-clock.ts). Exclusive holders and fair
    // permits wait in line there; another primitive's ticket names its waiter here.
    const ticket = newTicket(ticketTtlOf(effective));
    return {
      admission,
      ttlMs,
      effective,
      callSettings,
      signal,
      autoExtend,
      fencing: fencing === true,
      startMs: context.clock.monotonicMs(),
      ticket,
      inLine: rule && !rule.inLine ? '' : ticket,
      attempts: [],
      retries: 0,
      // Retries used up. A retry woken by a release costs none while the acquire has waited no longer
      // than its retries could have (retryCount × the longest sleep): a release wakes a waiter long
      // before retryDelay, and a waiter that then loses the race (a reader, a racing semaphore's
      // permit: they have no place in line) would otherwise burn its retries in a few ms.
      patienceMs: effective.retryCount * (effective.retryDelayMs + effective.retryJitterMs),
      from: 0,
      waiter: undefined,
    };
  }

  /**
   * The lock an enclosing `using()` routine holds the keys with, re-entered: a routine holding them
   * exclusively re-enters them (a writer may also read), one holding them to read re-enters them
   * to read again; a rule that is not shared is never re-entered (a permit is always another permit).
   */
  #reentered(admission: Admission, effective: EffectiveSettings, fencing: boolean): Lock | undefined {
    const { rule, keys } = admission;
    if (!effective.reentrant || (rule && !rule.shared)) return undefined;
    const outer = this.context.scope.heldFor(keys, rule !== undefined);
    if (!outer) return undefined;
    if (fencing && outer.fencingToken === undefined) {
      throw new TypeError(
        `acquire of ${formatResources(keys)} with fencing re-enters a lock acquired without it, which has no fencing token; ` +
          'acquire the outer lock with { fencing: true }',
      );
    }
    this.context.stats.acquisitions.reentered++;
    return Lock.viewOf(this.context.owner, outer, keys);
  }

  /**
   * A majority of masters handed the refused attempt's value to the waiter (or kept it for it): the
   * lock, valid from that attempt's start (each master set the key after it) until the sooner of
   * its ttl and the ticket's (a master hands a key no longer than the head's place lasts: a dead
   * head blocks no longer). Unless it extends itself, it is claimed for the whole ttl by an extend
   * halfway through that, if it is still held then. Undefined: no longer valid, or quit meanwhile.
   */
  #handedOut(call: AcquireCall, acquire: AcquireOperation | AdmitOperation, attempt: number, start: AttemptStart, record: AttemptRecord): Lock | undefined {
    const { context } = this;
    const { effective, ttlMs } = call;
    if (context.closing.aborted || call.waiter!.handedBy(acquire.value) < effective.quorum) return undefined;
    const validMs = Math.min(ttlMs, ticketTtlOf(effective));
    const expiration = expirationMs(start.epochMs, validMs, effective.driftFactor);
    if (expiration <= context.clock.epochMs()) return undefined;
    context.stats.acquisitions.handed++;
    const lock = this.#handOut(call, acquire, attempt, start, undefined, record, expiration);
    if (validMs < ttlMs && !call.autoExtend) {
      const claim = (): void => {
        if (lock.isLive(context.clock.epochMs())) this.extend(lock, ttlMs, () => undefined).catch(() => undefined);
      };
      setTimeout(claim, (expiration - context.clock.epochMs()) / 2).unref();
    }
    return lock;
  }

  /**
   * A granted attempt becomes the caller's Lock (a grouped rule's: on the group a quorum gave it);
   * `expiration`: a handed lock's (#handedOut).
   */
  #handOut(
    call: AcquireCall,
    acquire: AcquireOperation | AdmitOperation,
    attempt: number,
    start: AttemptStart,
    vote: FanOutResult | undefined,
    record: AttemptRecord,
    expiration = expirationMs(start.epochMs, call.ttlMs, call.effective.driftFactor),
  ): Lock {
    const { context } = this;
    const { ttlMs, effective } = call;
    const { keys, rule } = call.admission;
    let held = keys;
    let lease = call.admission.lease;
    if (rule?.grouped) {
      const group = vote!.slot!;
      held = [keys[group]!];
      lease = rule.leaseFor?.(group) ?? lease;
      dropSpareGroups(context, acquire, group, vote!, effective, rule.inLine ? call.ticket : '');
    }
    const token = record.fencing?.token;
    const lock = new Lock(context.owner, { resources: held, value: acquire.value, expiration, attempts: attempt, ttlMs, callSettings: call.callSettings, fencingToken: token, quorum: effective.quorum, ticket: call.ticket, lease });
    lock.acquiredAtMs = context.clock.monotonicMs();
    if (call.autoExtend) {
      lock.keepAlive({ ttlMs, thresholdMs: effective.automaticExtensionThresholdMs, extend: this.extend, scheduler: context.renewals });
    }
    const waitMs = lock.acquiredAtMs - call.startMs;
    context.stats.acquired(waitMs);
    context.emit('acquired', () => ({ lock, resources: held, attempts: attempt, waitMs, attempt: record }));
    return lock;
  }

  /** The error an acquire that used up its retries fails with: credentials refused, refused by a quorum, or not. */
  #failure(call: AcquireCall, attempt: number, record: AttemptRecord): Error {
    const { admission, effective } = call;
    const { keys } = admission;
    const description = admission.description ?? formatResources(keys);
    const masters = this.context.masters.count;
    const refusedCredentials = credentialsRefused(record, masters, effective.quorum);
    if (refusedCredentials) {
      const message = credentialsFailure(description, refusedCredentials, masters, effective.quorum);
      return new AuthenticationError(message, keys, call.attempts, refusedCredentials.nodes);
    }
    const unscripted = scriptingRefused(record, masters, effective.quorum);
    if (unscripted) {
      const message = scriptingFailure(description, unscripted, masters, effective.quorum);
      return new ScriptingUnavailableError(message, keys, call.attempts, unscripted.reason, unscripted.nodes);
    }
    const refused = record.outcomes.filter(isRefusal).length;
    const Failure = refused > masters - effective.quorum ? ResourceLockedError : ExecutionError;
    return new Failure(acquireFailure(description, attempt, effective, record), keys, call.attempts);
  }
}

