/**
 * How long an acquire waits between attempts, and how long its ticket keeps its place in line
 * meanwhile: the retry policy, from the call's effective settings. Pure but for Math.random.
 */
import type { AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';
import { retryDelayMs } from '../protocol/validity.js';

/**
 * How long a ticket keeps its place without a new attempt: two of the longest sleeps between
 * attempts and one attempt. A waiter renews it on every attempt, so only a dead waiter's lapses
 * (and it blocks the line no longer than this).
 */
export function ticketTtlOf(effective: EffectiveSettings): number {
  return Math.ceil(2 * (effective.retryDelayMs + effective.retryJitterMs) + effective.nodeTimeoutMs);
}

export function fallbackDelayMs(effective: EffectiveSettings): number {
  return retryDelayMs(effective.retryDelayMs, effective.retryJitterMs, Math.random());
}

/**
 * How long a refused attempt sleeps (a release announcement wakes it sooner): retryDelay ± jitter,
 * or less when a quorum of masters could grant sooner than that. A master that granted (the grant
 * was rolled back) is free now; one that refused is free once what refused it lapses: the blocking
 * key's ttl, or the place of the waiter ahead in line, which lapses unless that waiter tries again.
 * A waiter cut off or gone no longer does, and nothing announces the lapse: without this, the line
 * stood still for up to one more retry sleep after it (the kernel lab's partitions, issue 27).
 */
export function waitMs(record: AttemptRecord, effective: EffectiveSettings): number {
  const fallback = fallbackDelayMs(effective);
  if (record.granted >= effective.quorum) return fallback; // refused for its validity, not by the masters
  const freeInMs: number[] = [];
  for (const outcome of record.outcomes) {
    // A permit's master that gave another slot than the leading one is not free for that slot.
    if (outcome.status === 'granted') {
      if (outcome.slot === undefined || outcome.slot === record.slot) freeInMs.push(0);
    }
    else if ((outcome.status === 'locked' || outcome.status === 'queued') && outcome.pttlMs >= 0) freeInMs.push(outcome.pttlMs);
  }
  if (freeInMs.length < effective.quorum) return fallback;
  freeInMs.sort((a, b) => a - b);
  return Math.min(fallback, freeInMs[effective.quorum - 1]! + 1);
}
