/**
 * The measuring loops. Each runs one contender for one slice (a number of cycles or a duration)
 * and adds into an accumulator, so the runner can interleave contenders slice by slice.
 * A cycle is acquire + (critical section) + release; every cycle races the same deadline, and a
 * contender that misses it is reported as hung and not run again in that scenario.
 */
import * as hdr from 'hdr-histogram-js';
import type { Contender, Held } from './contender.js';

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
  /** S8/S9 only: what the bench itself saw of the holders (sharedSlice). */
  readonly shared: SharedTally;
}

/**
 * S8/S9: the acquires' waits, and the holders counted by the bench from each acquire resolving to
 * its release being called (the window in which the library promises the hold is valid).
 */
export interface SharedTally {
  /** Acquire called to resolved, successful acquires; and of the write holds alone (S9). */
  readonly waitUs: hdr.Histogram;
  readonly writeWaitUs: hdr.Histogram;
  reads: number;
  writes: number;
  /** The most holds of any kind at once, and of read holds. */
  maxHolders: number;
  maxReaders: number;
  /** Holds that began beside more holders than the primitive allows (S8: over the limit; S9: a writer beside anyone). */
  violations: number;
}

export function newTally(): Tally {
  return {
    latencyUs: histogram(),
    cycles: 0,
    failures: 0,
    releaseFailures: 0,
    hung: 0,
    measuredMs: 0,
    perWorker: [],
    maxWaitMs: 0,
    handoffUs: histogram(),
    shared: { waitUs: histogram(), writeWaitUs: histogram(), reads: 0, writes: 0, maxHolders: 0, maxReaders: 0, violations: 0 },
  };
}

function histogram(): hdr.Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
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

export interface SharedPlan {
  readonly workers: number;
  readonly durationMs: number;
  readonly sectionMs: number;
  /** The share of cycles that take a read hold (S9); the others call `acquire` (a permit, a write hold). */
  readonly readShare: number;
  /** How many `acquire` holds may be valid at once (S8: the semaphore's limit; S9: 1, and none beside a read hold). */
  readonly limit: number;
}

/**
 * S8/S9: `workers` workers on ONE name, each cycle a permit, a read or a write hold, `sectionMs`
 * held, for `durationMs`. The bench counts holders itself: a hold is counted from its acquire
 * resolving until its release is called, and one that began where the primitive allows no more
 * holders is a violation.
 */
export async function sharedSlice(options: SliceOptions, plan: SharedPlan): Promise<void> {
  const { contender, tally, deadlineMs } = options;
  const shared = tally.shared;
  const start = performance.now();
  const end = start + plan.durationMs;
  const perWorker = Array.from({ length: plan.workers }, () => 0);
  let stop = false;
  let exclusive = 0;
  let readers = 0;
  const take = (read: boolean): Promise<Held> =>
    read ? contender.read!(options.keyPrefix, TTL_MS) : contender.acquire(options.keyPrefix, TTL_MS);
  await Promise.all(
    perWorker.map(async (_, worker) => {
      try {
        while (!stop && performance.now() < end) {
          const read = Math.random() < plan.readShare;
          const begin = performance.now();
          let held: Held;
          try {
            held = await withDeadline(take(read), deadlineMs);
          } catch (error) {
            if (error instanceof Hung) throw error;
            tally.failures++;
            continue;
          }
          const waitUs = Math.max(1, Math.round((performance.now() - begin) * 1000));
          shared.waitUs.recordValue(waitUs);
          if (read) {
            readers++;
            shared.reads++;
          } else {
            exclusive++;
            shared.writes++;
            if (plan.readShare > 0) shared.writeWaitUs.recordValue(waitUs);
          }
          if (exclusive > plan.limit || (exclusive > 0 && readers > 0)) shared.violations++;
          shared.maxHolders = Math.max(shared.maxHolders, exclusive + readers);
          shared.maxReaders = Math.max(shared.maxReaders, readers);
          if (plan.sectionMs > 0) await new Promise((resolve) => setTimeout(resolve, plan.sectionMs));
          if (read) readers--;
          else exclusive--;
          try {
            await withDeadline(held.release(), deadlineMs);
          } catch (error) {
            if (error instanceof Hung) throw error;
            tally.releaseFailures++;
            continue;
          }
          tally.latencyUs.recordValue(Math.max(1, Math.round((performance.now() - begin) * 1000)));
          tally.cycles++;
          perWorker[worker]!++;
          tally.maxWaitMs = Math.max(tally.maxWaitMs, waitUs / 1000);
        }
      } catch {
        tally.hung++;
        stop = true;
      }
    }),
  );
  tally.measuredMs += performance.now() - start;
  tally.perWorker = tally.perWorker.length ? tally.perWorker.map((count, i) => count + perWorker[i]!) : perWorker;
}

/** Jain's fairness index: 1 when every worker got the same share, 1/n when one got everything. */
export function jainIndex(shares: readonly number[]): number {
  const sum = shares.reduce((a, b) => a + b, 0);
  const squares = shares.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (shares.length * squares);
}
