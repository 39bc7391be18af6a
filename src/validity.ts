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
 * Epoch ms at which a lock's validity ends, given the epoch time at the end of the winning
 * attempt. Rounded down so the lock never looks valid for longer than it is.
 */
export function expirationMs(attemptEndEpochMs: number, validity: number): number {
  return Math.floor(attemptEndEpochMs + validity);
}

/** retryDelay ± jitter, uniformly drawn, never negative. `random` is in [0, 1). */
export function retryDelayMs(retryDelay: number, retryJitter: number, random: number): number {
  return Math.max(0, Math.round(retryDelay + (random * 2 - 1) * retryJitter));
}
