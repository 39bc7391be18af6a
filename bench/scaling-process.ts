/**
 * The client of `npm run bench:scaling` (bench/scaling.ts), alone in this process: ours on URLs.
 * It runs phases on request (bench/serve-contender.ts: argv, set-up, messages): acquires only,
 * keeping every lock; releases only, of the locks the last acquire phase kept; or acquire + release
 * cycles (S2's loop). Each phase reports how many operations it completed and this process' CPU
 * over it (process.cpuUsage), so the parent can divide the masters' and the client's CPU by them.
 * It can pin itself to CPUs (`taskset -a -p`, every thread), for the parent's check.
 */
import { execFileSync } from 'node:child_process';
import type { Contender, Held } from './contender.js';
import { serveContender } from './serve-contender.js';
import { Hung, TTL_MS, concurrentSlice, newTally, withDeadline } from './scenarios.js';

export type ScalingWork =
  | { readonly kind: 'pin'; readonly cpus: string }
  /** `locks` acquires of distinct keys by `workers` concurrent workers; the locks are kept. */
  | { readonly kind: 'acquire'; readonly workers: number; readonly locks: number; readonly keyPrefix: string; readonly deadlineMs: number }
  /** Releases of every lock the acquire phases kept, by `workers` concurrent workers. */
  | { readonly kind: 'release'; readonly workers: number; readonly deadlineMs: number }
  /** S2: `workers` workers on distinct keys, acquire + release, for `durationMs`. */
  | { readonly kind: 'cycles'; readonly workers: number; readonly durationMs: number; readonly keyPrefix: string; readonly deadlineMs: number };

/** The work that measures something (all but `pin`). */
export type PhaseWork = Exclude<ScalingWork, { readonly kind: 'pin' }>;

export interface PhaseResult {
  /** Operations completed: acquires, releases, or whole cycles. */
  readonly operations: number;
  readonly failures: number;
  readonly hung: number;
  readonly elapsedMs: number;
  /** This process' CPU over the phase, user + system, µs. */
  readonly cpuUs: number;
}

/** The locks the acquire phases took and no release phase has released yet. */
const held: Held[] = [];

/** `workers` loops, each running `step` until it answers false or one of them hung. */
async function inParallel(workers: number, step: () => Promise<boolean>): Promise<{ hung: number }> {
  let hung = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      try {
        while (hung === 0 && (await step()));
      } catch (error) {
        if (!(error instanceof Hung)) throw error;
        hung++;
      }
    }),
  );
  return { hung };
}

async function phase(contender: Contender, work: ScalingWork): Promise<PhaseResult> {
  if (work.kind === 'pin') {
    execFileSync('taskset', ['-a', '-p', '-c', work.cpus, String(process.pid)], { stdio: 'ignore' });
    return { operations: 0, failures: 0, hung: 0, elapsedMs: 0, cpuUs: 0 };
  }
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  let operations = 0;
  let failures = 0;
  let hung = 0;
  if (work.kind === 'acquire') {
    let next = 0;
    ({ hung } = await inParallel(work.workers, async () => {
      if (next >= work.locks) return false;
      const key = `${work.keyPrefix}:${next++}`;
      try {
        held.push(await withDeadline(contender.acquire(key, TTL_MS), work.deadlineMs));
        operations++;
      } catch (error) {
        if (error instanceof Hung) throw error;
        failures++;
      }
      return true;
    }));
  } else if (work.kind === 'release') {
    ({ hung } = await inParallel(work.workers, async () => {
      const lock = held.pop();
      if (!lock) return false;
      try {
        await withDeadline(lock.release(), work.deadlineMs);
        operations++;
      } catch (error) {
        if (error instanceof Hung) throw error;
        failures++;
      }
      return true;
    }));
  } else {
    const tally = newTally();
    await concurrentSlice({ contender, tally, keyPrefix: work.keyPrefix, deadlineMs: work.deadlineMs }, work.workers, work.durationMs);
    ({ cycles: operations, failures, hung } = tally);
  }
  const cpu = process.cpuUsage(cpuBefore);
  return { operations, failures, hung, elapsedMs: performance.now() - start, cpuUs: cpu.user + cpu.system };
}

await serveContender('bench/scaling-process.ts', phase);
