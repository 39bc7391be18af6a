/**
 * One slice of `npm run bench:own`: the work asked of a contender (OwnWork, what its process,
 * bench/own-process.ts, is sent) and what it measured (OwnSlice), as the IPC message and the JSON
 * record carry it: made from a Tally by the contender's process (S1, S2, S3), by the parent from
 * the merged rounds of a contender's processes (S6), or in the measuring process itself
 * (`npm run bench:versions -- --in-process`).
 */
import type { Contender } from './contender.js';
import { concurrentSlice, hotKeySlice, jainIndex, newTally, sequentialSlice, type Tally } from './scenarios.js';

export type OwnWork =
  /** Cycles not measured: before the first round, and before each slice after the others ran. */
  | { readonly kind: 'warm'; readonly cycles: number; readonly keyPrefix: string; readonly deadlineMs: number }
  | { readonly kind: 'S1'; readonly cycles: number; readonly keyPrefix: string; readonly deadlineMs: number }
  | { readonly kind: 'S2'; readonly workers: number; readonly durationMs: number; readonly keyPrefix: string; readonly deadlineMs: number }
  /** The hot key: `workers` workers of this process on the one key `keyPrefix`, `sectionMs` held. */
  | {
      readonly kind: 'S3';
      readonly workers: number;
      readonly durationMs: number;
      readonly sectionMs: number;
      readonly keyPrefix: string;
      readonly deadlineMs: number;
    };

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

/** Does `work` on `contender`, in this process: its figures, and this process' CPU over it (process.cpuUsage). */
export async function ownWork(contender: Contender, work: OwnWork): Promise<OwnSlice> {
  const tally = newTally();
  const options = { contender, tally, keyPrefix: work.keyPrefix, deadlineMs: work.deadlineMs };
  const cpuBefore = process.cpuUsage();
  if (work.kind === 'S2') await concurrentSlice(options, work.workers, work.durationMs);
  else if (work.kind === 'S3') await hotKeySlice(options, work.workers, work.durationMs, work.sectionMs);
  else await sequentialSlice(options, work.cycles);
  const cpu = process.cpuUsage(cpuBefore);
  return ownSlice(tally, cpu.user + cpu.system, work.kind === 'S3');
}
