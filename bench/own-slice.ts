/**
 * What one slice of `npm run bench:own` measured, as the IPC message and the JSON record carry it:
 * made from a Tally by the contender's process (S1, S2, S3) or by the parent from the merged rounds
 * of a contender's processes (S6).
 */
import { jainIndex, type Tally } from './scenarios.js';

export interface OwnSlice {
  readonly cycles: number;
  /** Acquires that rejected: on the hot key, the acquisitions that gave up. */
  readonly failures: number;
  readonly hung: number;
  readonly measuredMs: number;
  /** Null when no cycle succeeded (an IPC message carries no NaN). */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** The contender's process CPU over the slice, user + system, µs (S6: its processes summed). */
  readonly cpuUs: number;
  /** Hot key only (S3, S6). */
  readonly hotKey?: HotKeyFigures;
}

export interface HotKeyFigures {
  /** Jain's index over the workers' acquisitions (S3), or over the processes' (S6). */
  readonly jain: number;
  /** From one holder's release resolving to the next holder's acquire resolving; null if the lock never changed hands. */
  readonly handoffP50Ms: number | null;
  /** The longest wait of an acquire that succeeded. */
  readonly maxWaitMs: number;
}

/** `tally`'s figures; `hotKey` adds fairness, hand-off and the longest wait. */
export function ownSlice(tally: Tally, cpuUs: number, hotKey: boolean): OwnSlice {
  const ms = (percentile: number): number | null => (tally.cycles ? tally.latencyUs.getValueAtPercentile(percentile) / 1000 : null);
  return {
    cycles: tally.cycles,
    failures: tally.failures,
    hung: tally.hung,
    measuredMs: tally.measuredMs,
    p50Ms: ms(50),
    p99Ms: ms(99),
    cpuUs,
    ...(hotKey
      ? {
          hotKey: {
            jain: jainIndex(tally.perWorker),
            handoffP50Ms: tally.handoffUs.totalCount ? tally.handoffUs.getValueAtPercentile(50) / 1000 : null,
            maxWaitMs: tally.maxWaitMs,
          },
        }
      : {}),
  };
}
