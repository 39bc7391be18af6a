/**
 * One contender of `npm run bench:own` (bench/own.ts), alone in this process, the way a user runs
 * it: warm-up cycles, then S1, S2 or S3 slices on request (bench/serve-contender.ts: argv, set-up,
 * messages). Each slice reports its figures and this process' CPU over it (process.cpuUsage).
 */
import type { Contender } from './contender.js';
import { ownSlice, type OwnSlice } from './own-slice.js';
import { serveContender } from './serve-contender.js';
import { concurrentSlice, hotKeySlice, newTally, sequentialSlice } from './scenarios.js';

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

async function slice(contender: Contender, work: OwnWork): Promise<OwnSlice> {
  const tally = newTally();
  const options = { contender, tally, keyPrefix: work.keyPrefix, deadlineMs: work.deadlineMs };
  const cpuBefore = process.cpuUsage();
  if (work.kind === 'S2') await concurrentSlice(options, work.workers, work.durationMs);
  else if (work.kind === 'S3') await hotKeySlice(options, work.workers, work.durationMs, work.sectionMs);
  else await sequentialSlice(options, work.cycles);
  const cpu = process.cpuUsage(cpuBefore);
  return ownSlice(tally, cpu.user + cpu.system, work.kind === 'S3');
}

await serveContender('bench/own-process.ts', slice);
