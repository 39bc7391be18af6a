/**
 * One S6 process: a contender at its defaults (bench/libraries.ts, profile `defaults`) with
 * `workers` concurrent workers on the one resource each round names, for a duration. Driven by IPC
 * from bench/processes.ts (bench/serve-contender.ts: argv, set-up, messages).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from './contender.js';
import { serveContender } from './serve-contender.js';
import { Hung, TTL_MS, withDeadline } from './scenarios.js';

export interface HotKeyRound {
  readonly key: string;
  readonly durationMs: number;
  readonly workers: number;
  readonly sectionMs: number;
  /** Per call: an acquire or release not settled by then counts as hung, and this process stops. */
  readonly deadlineMs: number;
}

/** One process' round. Times are the machine's monotonic clock (shared by its processes), in ms. */
export interface RoundResult {
  readonly acquired: number;
  /** Acquires that rejected (the library gave up, whatever the error). */
  readonly gaveUp: number;
  readonly releaseFailures: number;
  readonly hung: number;
  /** Per successful cycle: acquire call to release resolved, µs. */
  readonly cycleUs: readonly number[];
  /** Per successful cycle, flattened: worker, acquire resolved, release resolved. */
  readonly holds: readonly number[];
  readonly maxWaitMs: number;
  readonly elapsedMs: number;
  /** This process' CPU over the round, user + system, µs. */
  readonly cpuUs: number;
}

const clockMs = (): number => Number(process.hrtime.bigint()) / 1e6;

async function round(contender: Contender, go: HotKeyRound): Promise<RoundResult> {
  const start = clockMs();
  const cpuBefore = process.cpuUsage();
  const end = start + go.durationMs;
  const counts = { acquired: 0, gaveUp: 0, releaseFailures: 0, hung: 0, maxWaitMs: 0 };
  const cycleUs: number[] = [];
  const holds: number[] = [];
  let stop = false;
  await Promise.all(
    Array.from({ length: go.workers }, async (_, worker) => {
      while (!stop && clockMs() < end) {
        const called = clockMs();
        try {
          const held = await withDeadline(contender.acquire(go.key, TTL_MS), go.deadlineMs);
          const acquiredAt = clockMs();
          counts.acquired++;
          counts.maxWaitMs = Math.max(counts.maxWaitMs, acquiredAt - called);
          await sleep(go.sectionMs);
          try {
            await withDeadline(held.release(), go.deadlineMs);
          } catch (error) {
            if (error instanceof Hung) throw error;
            counts.releaseFailures++;
            continue;
          }
          const releasedAt = clockMs();
          cycleUs.push(Math.max(1, Math.round((releasedAt - called) * 1000)));
          holds.push(worker, acquiredAt, releasedAt);
        } catch (error) {
          if (error instanceof Hung) {
            counts.hung++;
            stop = true;
          } else {
            counts.gaveUp++;
          }
        }
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return { ...counts, cycleUs, holds, elapsedMs: clockMs() - start, cpuUs: cpu.user + cpu.system };
}

await serveContender('bench/hot-key-process.ts', round);
