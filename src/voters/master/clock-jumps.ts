/**
 * Clock-jump detection for one master (restartGuard.clockJumps): its wall clock (the TIME a script
 * call read) against this process' monotonic clock. Between two readings the offset
 * masterMs − monotonicMs may move by the drift allowance (driftFactor × the time between them, +2 ms
 * as in the validity); a reading outside that is a jump. A forward jump expired that master's keys
 * early — its earlier grants may be gone while their holders still count them — so the restart
 * guard withholds its votes; a backward one makes keys outlive their ttl (liveness, not safety).
 *
 * Rigorous, not statistical: each reading is an interval of offsets, [T − received, T + 1 − sent]
 * (TIME is read somewhere in the round trip, and truncated to the ms), so a slow round trip or a
 * stalled event loop widens it instead of passing for a jump. Pure: the caller gives the instants.
 */

/** One reading of a master's clock: its TIME in ms, and when the call left and its answer was read (monotonic ms). */
export interface ClockReading {
  readonly masterMs: number;
  readonly sentAtMs: number;
  readonly receivedAtMs: number;
}

/** A jump seen between two readings; `jumpMs` is at least how far the clock moved beyond the allowance. */
export interface ClockJump {
  readonly direction: 'forward' | 'backward';
  readonly jumpMs: number;
}

/** The allowance's fixed part, as in the validity (protocol/validity.ts): 2 ms. */
const FIXED_ALLOWANCE_MS = 2;

export class ClockJumpDetector {
  /** The offsets the latest reading allows, narrowed by the earlier ones since the last jump, and its round trip; undefined before the first. */
  #last: { lowMs: number; highMs: number; sentAtMs: number; receivedAtMs: number } | undefined;

  constructor(readonly driftFactor: number) {}

  /** Judge `reading` against the baseline (undefined: none, or within the allowance), then narrow the baseline by it, or after a jump restart it there. */
  observe(reading: ClockReading): ClockJump | undefined {
    const { masterMs, sentAtMs, receivedAtMs } = reading;
    const current = { lowMs: masterMs - receivedAtMs, highMs: masterMs + 1 - sentAtMs, sentAtMs, receivedAtMs };
    const last = this.#last;
    // A reading sent before the kept one (another connection's, answered late) says nothing newer.
    if (last && sentAtMs < last.sentAtMs) return undefined;
    this.#last = current;
    if (!last) return undefined;
    // The two TIME reads are at most this far apart: the drift allowance over that span.
    const spanMs = Math.max(receivedAtMs, last.receivedAtMs) - last.sentAtMs;
    const allowanceMs = this.driftFactor * spanMs + FIXED_ALLOWANCE_MS;
    const aheadMs = current.lowMs - (last.highMs + allowanceMs);
    if (aheadMs > 0) return { direction: 'forward', jumpMs: aheadMs };
    const behindMs = last.lowMs - allowanceMs - current.highMs;
    if (behindMs > 0) return { direction: 'backward', jumpMs: behindMs };
    // No jump: the offset lies in both intervals (the kept one grown by the allowance), so the
    // baseline is where they overlap. Keeping a wide reading whole instead (a slow round trip) would
    // let a jump it straddles pass unseen by every fast reading after it.
    this.#last = { ...current, lowMs: Math.max(current.lowMs, last.lowMs - allowanceMs), highMs: Math.min(current.highMs, last.highMs + allowanceMs) };
    return undefined;
  }

  /** Another server at the master's address (a new run id): its clock is a new baseline, not a jump. */
  forget(): void {
    this.#last = undefined;
  }
}
