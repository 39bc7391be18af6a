/**
 * A worker process of the job-dedup example. It is given the same job ids as every other worker and
 * runs each job that nobody has run yet: a lock per job id, taken without waiting (retryCount: 0 —
 * if it is refused, another worker has the job), and a "done" marker written before the lock is
 * released. The marker is checked again once the lock is held, because another worker may have
 * finished the job between our first look and our acquire.
 *
 * Jobs it could not lock are looked at again after a pass over the list, until every job is marked
 * done: a refused acquire usually means another worker runs the job, but contenders can also split
 * the masters' votes so that nobody gets it, and then the job is still to do.
 *
 * A worker that dies between a job's effect and its marker leaves the job unmarked: after the lock
 * expires another worker runs it again. Exactly once across crashes needs the effect itself to be
 * idempotent, or written in the same transaction as the marker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { ExecutionError, LockLostError, Redlock } from '../../src/index.js'; // in your code: from 'redlock-quorum'

export interface StartMessage {
  readonly type: 'start';
  readonly jobs: readonly string[];
}

export interface WorkerReport {
  readonly type: 'report';
  readonly worker: string;
  readonly ran: readonly string[];
  /** Acquires refused (another worker had the job, or a split vote) and locks lost mid-job. */
  readonly refused: number;
  /** Jobs found marked done, before or after taking the lock. */
  readonly alreadyDone: number;
  readonly passes: number;
}

type Outcome = 'ran' | 'done' | 'refused';

const worker = process.env['WORKER']!;
const namespace = process.env['JOB_NAMESPACE']!;
const redlock = new Redlock(process.env['REDLOCK_NODES']!.split(','));
// The job store: where the jobs' effects and done markers live (in your code, your database).
const store = createClient({ url: process.env['STORE_URL']! });
await store.connect();

const doneKey = (job: string): string => `${namespace}:done:${job}`;

/** The job itself: some work, then its effect, an entry in the shared ledger the parent checks. */
async function perform(job: string, signal: AbortSignal): Promise<void> {
  try {
    await sleep(5 + Math.random() * 15, undefined, { signal });
  } catch {
    signal.throwIfAborted(); // the lock was lost before the effect: the job is still to do
  }
  await store.rPush(`${namespace}:ledger`, `${job} by ${worker}`);
}

async function runOnce(job: string): Promise<Outcome> {
  if ((await store.exists(doneKey(job))) === 1) return 'done'; // cheap look before locking
  try {
    return await redlock.using(`${namespace}:job:${job}`, 10_000, { retryCount: 0 }, async (signal): Promise<Outcome> => {
      if ((await store.exists(doneKey(job))) === 1) return 'done';
      await perform(job, signal);
      // The effect happened: mark it even if the lock was lost meanwhile, or it would run again.
      await store.set(doneKey(job), worker);
      return 'ran';
    });
  } catch (error) {
    if (error instanceof ExecutionError || error instanceof LockLostError) return 'refused';
    throw error;
  }
}

const { jobs } = await new Promise<StartMessage>((resolve) => {
  process.once('message', (message: StartMessage) => resolve(message));
  process.send?.({ type: 'ready' });
});
const ran: string[] = [];
let refused = 0;
let alreadyDone = 0;
let passes = 0;
for (let pending = jobs; pending.length > 0; passes++) {
  if (passes > 0) await sleep(20); // give the holders of the refused jobs time to finish them
  const stillPending: string[] = [];
  for (const job of pending) {
    const outcome = await runOnce(job);
    if (outcome === 'ran') ran.push(job);
    else if (outcome === 'done') alreadyDone++;
    else {
      refused++;
      stillPending.push(job);
    }
  }
  pending = stillPending;
}
process.send?.({ type: 'report', worker, ran, refused, alreadyDone, passes } satisfies WorkerReport);
await redlock.quit();
await store.close();
process.disconnect();
