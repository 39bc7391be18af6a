/**
 * Extend: a held lock's keys set to a new ttl on a quorum of the masters that still hold it,
 * validity recomputed from this extend's own start, failed attempts retried while the lock is valid.
 */
import { ExecutionError, LockExpiredError, LockLostError, LockReleasedError, formatResources } from '../errors.js';
import type { AttemptRecord } from '../protocol/outcomes.js';
import { resolveSettings, type EffectiveSettings } from '../config/settings.js';
import { validateTtl } from '../config/validation.js';
import { Lock } from '../lease/lock.js';
import type { LockOperation } from '../script/codec.js';
import { sleep } from '../protocol/timers.js';
import { expirationMs } from '../protocol/validity.js';
import { assertOpen, type CallContext } from './context.js';
import { describeVote, remember } from './failure.js';
import { fallbackDelayMs } from './retry.js';

/**
 * `onFailedAttempt`: a Lifetime keeps the outcomes for its LockLostError. Extends of one lock run one
 * at a time, so one that lowered the expiration is decided before another raises it.
 */
export async function extendLock(
  context: CallContext,
  lock: Lock,
  ttl: number,
  onFailedAttempt?: (record: AttemptRecord) => void,
): Promise<Lock> {
  if (!(lock instanceof Lock)) throw new TypeError('extend needs a Lock returned by acquire');
  const ttlMs = validateTtl(ttl);
  const effective = resolveSettings(context.settings, lock.callSettings, context.masters.count, ttlMs);
  assertOpen(context);
  const { clock, stats } = context;
  return lock.queueExtend(async () => {
    const startMs = clock.monotonicMs();
    const attempts: AttemptRecord[] = [];
    const automatic = onFailedAttempt !== undefined;
    try {
      const record = await extendAttempts(context, lock, ttlMs, effective, attempts, onFailedAttempt);
      stats.extensions.succeeded++;
      if (automatic) stats.extensions.automatic++;
      const durationMs = clock.monotonicMs() - startMs;
      context.emit('extended', () => ({ lock, resources: lock.resources, automatic, durationMs, attempt: record }));
      return lock;
    } catch (error) {
      stats.extensions.failed++;
      const durationMs = clock.monotonicMs() - startMs;
      context.emit('failed', () => ({ operation: 'extend', lock, resources: lock.resources, durationMs, error, attempts }));
      throw error;
    }
  });
}

async function extendAttempts(
  context: CallContext,
  lock: Lock,
  ttlMs: number,
  effective: EffectiveSettings,
  attempts: AttemptRecord[],
  onFailedAttempt: ((record: AttemptRecord) => void) | undefined,
): Promise<AttemptRecord> {
  const { masters, clock } = context;
  for (let attempt = 1; ; attempt++) {
    assertOpen(context);
    checkExtendable(lock, attempt, clock.epochMs(), attempts);
    const extend: LockOperation = { kind: 'extend', keys: lock.resources, value: lock.value, ttlMs };
    const start = masters.startOfAttempt();
    const expiration = expirationMs(start.epochMs, ttlMs, effective.driftFactor);
    // Sent, this extend may run on a master even if it fails here (an answer that times out, a
    // command that waits behind a paused master) and, with a ttl below the keys' remaining one,
    // shorten them: so the lock is valid only as long as it would leave, until it succeeds.
    lock.lowerExpiration(expiration);
    const vote = await masters.fanOut(extend, effective);
    const record = masters.attemptRecord(vote, ttlMs, effective, attempt, start, lock.resources);
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
    if (masters.count - lost < effective.quorum) {
      // Decided as soon as the quorum was impossible: the count is of the answers by then, not of every master.
      const unanswered = vote.outcomes.filter((outcome) => outcome.status === 'pending').length;
      const error = new ExecutionError(
        `lock on ${formatResources(lock.resources)} is lost: ${lost} of ${masters.count} masters had answered that they no longer hold it` +
          `${unanswered > 0 ? ` (${unanswered} had not answered yet)` : ''}, so a quorum of ${effective.quorum} is impossible`,
        lock.resources,
        attempts,
      );
      // Another client can be granted it now: the lock ends here, whoever asked for the extend.
      lock.lose(new LockLostError(lock.resources, error.message, attempts, error));
      throw error;
    }
    if (effective.retryCount !== -1 && attempt > effective.retryCount) {
      throw new ExecutionError(`could not extend the lock on ${formatResources(lock.resources)}: ${describeVote(record, effective)}`, lock.resources, attempts);
    }
    // Never sleep through the last chance: at most half of the validity that is left.
    await sleep(Math.min(fallbackDelayMs(effective), Math.max(0, (lock.expiration - clock.epochMs()) / 2)), context.closing);
  }
}

/** Before an attempt: a lock released meanwhile (or before the extend began) or already expired sends nothing. */
function checkExtendable(lock: Lock, attempt: number, nowMs: number, attempts: AttemptRecord[]): void {
  if (lock.released) throw new LockReleasedError(lock.resources);
  if (nowMs < lock.expiration) return;
  if (attempt === 1) throw new LockExpiredError(lock.resources, lock.expiration);
  throw new ExecutionError(`could not extend the lock on ${formatResources(lock.resources)} before it expired (${attempt - 1} attempts)`, lock.resources, attempts);
}
