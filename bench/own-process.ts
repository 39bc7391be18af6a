/**
 * One contender of `npm run bench:own` (bench/own.ts), alone in this process, the way a user runs
 * it: warm-up cycles, then S1 or S2 slices on request (bench/serve-contender.ts: argv, set-up,
 * messages). Each slice reports its latencies and this process' CPU over it (process.cpuUsage).
 */
import type { Contender } from './contender.js';
import { serveContender } from './serve-contender.js';
import { concurrentSlice, newTally, sequentialSlice } from './scenarios.js';

export type OwnWork =
  /** Cycles not measured: before the first round, and before each slice after the others ran. */
  | { readonly kind: 'warm'; readonly cycles: number; readonly keyPrefix: string; readonly deadlineMs: number }
  | { readonly kind: 'S1'; readonly cycles: number; readonly keyPrefix: string; readonly deadlineMs: number }
  | { readonly kind: 'S2'; readonly workers: number; readonly durationMs: number; readonly keyPrefix: string; readonly deadlineMs: number };

export interface OwnSlice {
  readonly cycles: number;
  readonly failures: number;
  readonly hung: number;
  readonly measuredMs: number;
  /** Null when no cycle succeeded (an IPC message carries no NaN). */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** This process' CPU over the slice, user + system, µs. */
  readonly cpuUs: number;
}

async function slice(contender: Contender, work: OwnWork): Promise<OwnSlice> {
  const tally = newTally();
  const options = { contender, tally, keyPrefix: work.keyPrefix, deadlineMs: work.deadlineMs };
  const cpuBefore = process.cpuUsage();
  if (work.kind === 'S2') await concurrentSlice(options, work.workers, work.durationMs);
  else await sequentialSlice(options, work.cycles);
  const cpu = process.cpuUsage(cpuBefore);
  const ms = (percentile: number): number | null => (tally.cycles ? tally.latencyUs.getValueAtPercentile(percentile) / 1000 : null);
  return {
    cycles: tally.cycles,
    failures: tally.failures,
    hung: tally.hung,
    measuredMs: tally.measuredMs,
    p50Ms: ms(50),
    p99Ms: ms(99),
    cpuUs: cpu.user + cpu.system,
  };
}

await serveContender('bench/own-process.ts', slice);
