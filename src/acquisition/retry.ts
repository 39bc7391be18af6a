/** The retry policy: how long an acquire waits between attempts, and how long its ticket keeps its place meanwhile. */
import { isRefusal, type AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';
import { retryDelayMs } from '../protocol/validity.js';

/** How long a ticket keeps its place: two of the longest sleeps and one attempt (each renews it; a dead waiter's lapses). */
export function ticketTtlOf(effective: EffectiveSettings): number {
  return Math.ceil(2 * (effective.retryDelayMs + effective.retryJitterMs) + effective.nodeTimeoutMs);
}

export function fallbackDelayMs(effective: EffectiveSettings): number {
  return retryDelayMs(effective.retryDelayMs, effective.retryJitterMs, Math.random());
}

/**
 * How long a refused attempt sleeps (a release wakes it sooner): retryDelay ± jitter, or less when
 * a quorum could grant sooner. A master that granted (rolled back) is free now; one that refused is
 * free once the blocking key's ttl, or the place of the waiter ahead, lapses: nothing announces the
 * lapse of a waiter cut off or gone, and the line would stand still until the next retry.
 */
export function waitMs(record: AttemptRecord, effective: EffectiveSettings): number {
  const fallback = fallbackDelayMs(effective);
  if (record.granted >= effective.quorum) return fallback; // refused for its validity, not by the masters
  const freeInMs: number[] = [];
  for (const outcome of record.outcomes) {
    // A permit's master that gave another slot than the leading one is not free for that slot.
    if (outcome.status === 'granted') {
      if (outcome.slot === undefined || outcome.slot === record.slot) freeInMs.push(0);
    } else if (isRefusal(outcome) && outcome.pttlMs >= 0) freeInMs.push(outcome.pttlMs);
  }
  if (freeInMs.length < effective.quorum) return fallback;
  freeInMs.sort((a, b) => a - b);
  return Math.min(fallback, freeInMs[effective.quorum - 1]! + 1);
}
