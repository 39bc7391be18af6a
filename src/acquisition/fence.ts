/**
 * A fenced acquire's second round. Each granting master incremented its counter; the token is the
 * largest they answered. Raised to it on a quorum of the masters that hold the lock, any later quorum
 * includes one of them, whose increment answers more (docs/safety.md, "Fencing tokens"). Validity
 * counts both rounds.
 */
import type { AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';
import type { FanOutResult } from '../protocol/fan-out.js';
import { validityMs } from '../protocol/validity.js';
import type { AcquireOperation, LockOperation } from '../script/codec.js';
import type { CallContext } from './context.js';
import type { AttemptStart } from './masters.js';

export async function fenceRound(
  context: CallContext,
  acquire: AcquireOperation,
  vote: FanOutResult,
  record: AttemptRecord,
  start: AttemptStart,
  effective: EffectiveSettings,
  signal: AbortSignal | undefined,
): Promise<AttemptRecord> {
  const { keys, value, ttlMs } = acquire;
  const token = Math.max(...vote.outcomes.map((outcome) => (outcome.status === 'granted' ? (outcome.fence ?? 0) : 0)));
  const fence: LockOperation = { kind: 'fence', keys, value, token };
  const second = await context.masters.fanOut(fence, effective, { signal });
  const elapsedMs = context.clock.monotonicMs() - start.monotonicMs;
  const fields = {
    attempt: record.attempt,
    outcomes: record.outcomes,
    granted: record.granted,
    elapsedMs,
    validityMs: validityMs(ttlMs, elapsedMs, effective.driftFactor),
    fencing: { token, confirmed: second.granted, outcomes: second.outcomes },
  };
  return context.masters.record(fields, effective, keys);
}
