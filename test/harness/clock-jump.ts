/**
 * One real clock jump, for the tests of what observes it (metrics, traces): three masters of its own
 * with movable clocks (src/testing/clock.ts), a Redlock watching them (restartGuard.clockJumps), and
 * master 0's clock moved back 3 s, which the next script call sees. Backward: reported, no vote lost.
 */
import type { ClockJumpEvent, Redlock } from '../../src/index.js';
import { clockShimProblem } from '../../src/testing/clock.js';
import { startMasters } from '../../src/testing/redis-server.js';
import { eventually, redlockOn, uniquePrefix } from './cluster.js';

/** Why a clock cannot be moved here (no gcc), or undefined. */
export const clockJumpProblem = clockShimProblem();

const JUMP_BACK_MS = 3_000;

/**
 * Make master 0 of three jump back, `observe` having been called with the watching Redlock first;
 * resolves with the jump events once one was seen, every master stopped and the Redlock quit.
 */
export async function jumpOneClockBack(observe: (redlock: Redlock) => void): Promise<ClockJumpEvent[]> {
  const masters = await startMasters(3, { movableClock: true });
  const redlock = redlockOn(
    masters.map((master) => master.port),
    { restartGuard: { graceMs: 1_000, clockJumps: true }, retryCount: 0 },
  );
  try {
    const jumps: ClockJumpEvent[] = [];
    redlock.on('clockJump', (event) => jumps.push(event));
    observe(redlock);
    const key = uniquePrefix('clock-jump')('r');
    // A baseline on every master: a call each of them answered, once their restart grace is over.
    await eventually(async () => {
      const lock = await redlock.acquire(key, 1_000).catch(() => undefined);
      await lock?.release();
      return lock !== undefined && redlock.health().every((master) => master.withheld === undefined);
    }, 10_000);
    masters[0]!.clock!.jump(-JUMP_BACK_MS);
    // The shim rereads its file within a few ms; each call reads TIME again until one sees it.
    await eventually(async () => {
      const lock = await redlock.acquire(key, 1_000).catch(() => undefined);
      await lock?.release();
      return jumps.length > 0;
    }, 10_000);
    return jumps;
  } finally {
    await redlock.quit();
    for (const master of masters) master.stop();
  }
}
