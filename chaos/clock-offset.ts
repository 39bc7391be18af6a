/**
 * A chaos worker whose wall clock is off: REDLOCK_CHAOS_CLOCK_OFFSET_MS shifts this process'
 * `Date.now()` by that many ms (negative: behind). Imported first by worker.ts, so the library and
 * everything else in the process read the shifted clock from their first call, as they would on a
 * host whose clock is wrong; `performance.now()` (the monotonic clock) is left alone, and so is
 * `new Date()` (the library reads the wall clock through `Date.now()` alone). The runner converts
 * this worker's reported instants back to real time (`realMs`), so the checkers compare every
 * worker's beliefs on one clock.
 */
export const CLOCK_OFFSET_ENV = 'REDLOCK_CHAOS_CLOCK_OFFSET_MS';
export const CLOCK_OFFSET_MS = Number(process.env[CLOCK_OFFSET_ENV] ?? 0) || 0;

if (CLOCK_OFFSET_MS !== 0) {
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + CLOCK_OFFSET_MS;
}

/** An instant a worker with clock offset `offsetMs` reported, in real time. */
export const realMs = (reportedMs: number, offsetMs: number): number => reportedMs - offsetMs;
