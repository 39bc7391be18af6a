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
 * or less when the masters said the blocking keys expire sooner than that.
 */
export function waitMs(record: AttemptRecord, effective: EffectiveSettings): number {
  const pttls = record.outcomes.filter((outcome) => outcome.status === 'locked').map((outcome) => outcome.pttlMs ?? -1);
  const fallback = fallbackDelayMs(effective);
  if (pttls.length === 0 || pttls.some((pttl) => pttl < 0)) return fallback;
  return Math.min(fallback, Math.max(...pttls) + 1);
}
