/**
 * The measuring loops. Each runs one contender for one slice (a number of cycles or a duration)
 * and adds into an accumulator, so the runner can interleave contenders slice by slice.
 * A cycle is acquire + (critical section) + release; every cycle races the same deadline, and a
 * contender that misses it is reported as hung and not run again in that scenario.
 */
import * as hdr from 'hdr-histogram-js';
import type { Contender } from './libraries.js';

export interface Tally {
  readonly latencyUs: hdr.Histogram;
  cycles: number;
  failures: number;
  /** Releases that rejected (S6; the cycle is not counted). */
  releaseFailures: number;
  /** Cycles that missed the deadline (the library hung); the scenario stops for it. */
  hung: number;
  measuredMs: number;
  /** Hot key only: cycles per worker, and the longest single wait for the lock. */
  perWorker: number[];
  maxWaitMs: number;
  /** Hot key only: from one holder's release resolving to the next holder's acquire resolving. */
  readonly handoffUs: hdr.Histogram;
}

export function newTally(): Tally {
  return {
    latencyUs: hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 }),
    cycles: 0,
    failures: 0,
    releaseFailures: 0,
    hung: 0,
    measuredMs: 0,
    perWorker: [],
    maxWaitMs: 0,
    handoffUs: hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 }),
  };
}

export const TTL_MS = 10_000;

export interface SliceOptions {
  readonly contender: Contender;
  readonly tally: Tally;
  readonly deadlineMs: number;
  readonly keyPrefix: string;
}

/** A call that missed the per-call deadline: the library hung. */
export class Hung extends Error {}

/** Resolves with the promise, or rejects with Hung after `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Hung()), ms)));
  promise.catch(() => undefined); // a hung call may still settle later; nobody listens then
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** One cycle, timed; `sectionMs` of work while holding the lock. */
interface CycleResult {
  readonly ok: boolean;
  readonly waitMs: number;
  readonly acquiredAt: number;
  readonly releasedAt: number;
}

async function cycle(options: SliceOptions, key: string, sectionMs: number): Promise<CycleResult> {
  const start = performance.now();
  try {
    const held = await withDeadline(options.contender.acquire(key, TTL_MS), options.deadlineMs);
    const acquiredAt = performance.now();
    if (sectionMs > 0) await new Promise((resolve) => setTimeout(resolve, sectionMs));
    await withDeadline(held.release(), options.deadlineMs);
    const releasedAt = performance.now();
    options.tally.latencyUs.recordValue(Math.max(1, Math.round((releasedAt - start) * 1000)));
    options.tally.cycles++;
    return { ok: true, waitMs: acquiredAt - start, acquiredAt, releasedAt };
  } catch (error) {
    if (error instanceof Hung) {
      options.tally.hung++;
      throw error;
    }
    options.tally.failures++;
    const now = performance.now();
    return { ok: false, waitMs: now - start, acquiredAt: now, releasedAt: now };
  }
}

/** S1 (and S4/S5's S1): one worker, `cycles` sequential cycles on distinct keys. */
export async function sequentialSlice(options: SliceOptions, cycles: number): Promise<void> {
  const start = performance.now();
  try {
    for (let i = 0; i < cycles; i++) await cycle(options, `${options.keyPrefix}:${options.tally.cycles}:${i}`, 0);
  } catch {
    // hung: recorded
  } finally {
    options.tally.measuredMs += performance.now() - start;
  }
}

/** S2: `workers` concurrent workers, each on its own key, for `durationMs`. */
export async function concurrentSlice(options: SliceOptions, workers: number, durationMs: number): Promise<void> {
  const start = performance.now();
  const end = start + durationMs;
  let stop = false;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      const key = `${options.keyPrefix}:w${worker}`;
      try {
        while (!stop && performance.now() < end) await cycle(options, key, 0);
      } catch {
        stop = true; // hung: the others stop too, the contender is done for this scenario
      }
    }),
  );
  options.tally.measuredMs += performance.now() - start;
}

/** S3: `workers` workers on ONE key, `sectionMs` critical section, for `durationMs`. */
export async function hotKeySlice(options: SliceOptions, workers: number, durationMs: number, sectionMs: number): Promise<void> {
  const start = performance.now();
  const end = start + durationMs;
  const perWorker = Array.from({ length: workers }, () => 0);
  let stop = false;
  let lastReleasedAt = 0;
  let lastHolder = -1;
  await Promise.all(
    perWorker.map(async (_, worker) => {
      try {
        while (!stop && performance.now() < end) {
          const { waitMs, ok, acquiredAt, releasedAt } = await cycle(options, options.keyPrefix, sectionMs);
          if (!ok) continue;
          perWorker[worker]!++;
          options.tally.maxWaitMs = Math.max(options.tally.maxWaitMs, waitMs);
          // A hand-off: the lock passed from another worker to this one; from its release resolving
          // to this acquire resolving (a worker re-taking its own lock is not a hand-off).
          if (lastHolder !== worker && lastReleasedAt > 0) {
            options.tally.handoffUs.recordValue(Math.max(1, Math.round(Math.max(0, acquiredAt - lastReleasedAt) * 1000)));
          }
          lastReleasedAt = releasedAt;
          lastHolder = worker;
        }
      } catch {
        stop = true;
      }
    }),
  );
  options.tally.measuredMs += performance.now() - start;
  options.tally.perWorker = options.tally.perWorker.length
    ? options.tally.perWorker.map((count, i) => count + perWorker[i]!)
    : perWorker;
}

/** Jain's fairness index: 1 when every worker got the same share, 1/n when one got everything. */
export function jainIndex(shares: readonly number[]): number {
  const sum = shares.reduce((a, b) => a + b, 0);
  const squares = shares.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (shares.length * squares);
}
