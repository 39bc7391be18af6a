/** Timing maths of the Redlock algorithm: pure functions of measured times, so tests drive them with made-up ones. */

/** A source of time. `monotonicMs` never goes backwards; `epochMs` is wall-clock (`Date.now()`). */
export interface Clock {
  monotonicMs(): number;
  epochMs(): number;
}

export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  epochMs: () => Date.now(),
};

/** The allowance for clock drift between this process and the masters, plus 2 ms for Redis' expiry granularity (the paper's). */
export function driftMs(ttlMs: number, driftFactor: number): number {
  return Math.floor(ttlMs * driftFactor) + 2;
}

/** How long a lock taken with `ttlMs` is safe to use after an attempt that took `elapsedMs`; ≤ 0: not at all. */
export function validityMs(ttlMs: number, elapsedMs: number, driftFactor: number): number {
  return ttlMs - elapsedMs - driftMs(ttlMs, driftFactor);
}

/**
 * Epoch ms at which a lock's validity ends: the attempt's start + ttl − drift, rounded down. Every
 * key was set at or after that start, so none expires before start + ttl (within the drift); a clock
 * read after the decision would count as validity the time spent since (a GC pause, listeners).
 */
export function expirationMs(startEpochMs: number, ttlMs: number, driftFactor: number): number {
  return Math.floor(startEpochMs + ttlMs - driftMs(ttlMs, driftFactor));
}

/** retryDelay ± jitter, uniformly drawn, never negative. `random` is in [0, 1). */
export function retryDelayMs(retryDelay: number, retryJitter: number, random: number): number {
  return Math.max(0, Math.round(retryDelay + (random * 2 - 1) * retryJitter));
}
