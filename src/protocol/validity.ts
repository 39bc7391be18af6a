/**
 * Timing maths of the Redlock algorithm. Pure functions: every input is a number the caller
 * measured on its own clock, so tests drive them with made-up times.
 */

/** A source of time. `monotonicMs` never goes backwards; `epochMs` is wall-clock (`Date.now()`). */
export interface Clock {
  monotonicMs(): number;
  epochMs(): number;
}

export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  epochMs: () => Date.now(),
};

/**
 * The allowance for clock drift between this process and the masters, plus 2 ms for the
 * granularity of Redis' expiry clock (the Redlock paper's figure).
 */
export function driftMs(ttlMs: number, driftFactor: number): number {
  return Math.floor(ttlMs * driftFactor) + 2;
}

/**
 * How long a lock taken with `ttlMs` stays safe to use after an attempt that took `elapsedMs`:
 * validity = ttl − elapsed − drift. Zero or less means the lock must not be used.
 */
export function validityMs(ttlMs: number, elapsedMs: number, driftFactor: number): number {
  return ttlMs - elapsedMs - driftMs(ttlMs, driftFactor);
}

/**
 * Epoch ms at which a lock's validity ends: the attempt's start (read on the epoch clock before
 * its first command left) + ttl − drift. Every key was set at or after that start, so on every
 * master it expires no earlier than start + ttl (within the drift allowance). Anchored to the
 * start, never to a clock read after the decision: time spent between the decision and such a
 * read (other locks of the batch, listeners, a GC pause) would otherwise count as validity.
 * Equals the attempt's end + its validity. Rounded down.
 */
export function expirationMs(startEpochMs: number, ttlMs: number, driftFactor: number): number {
  return Math.floor(startEpochMs + ttlMs - driftMs(ttlMs, driftFactor));
}

/** retryDelay ± jitter, uniformly drawn, never negative. `random` is in [0, 1). */
export function retryDelayMs(retryDelay: number, retryJitter: number, random: number): number {
  return Math.max(0, Math.round(retryDelay + (random * 2 - 1) * retryJitter));
}
