/**
 * The chaos run's short workload in one process, for the Bun run (run.ts): a few workers, each its
 * own Redlock on clients of one kind, run lock, permit, read and write sections (chaos/workloads.ts)
 * against the chaos run's storage (chaos/storage.ts) while a master is paused, and another killed and
 * started again empty; then the chaos run's checker (chaos/checker.ts) judges the sections. Workers
 * are not processes here (a worker process under Bun would need the runner's IPC and proxies, which
 * the 25 s chaos runs in .ci/run cover under Node): the faults are the masters' own.
 */
import type { RedisMaster } from '../../src/testing/redis-server.js';
import { check, type Verdict } from '../../chaos/checker.js';
import { Storage, type StorageReply } from '../../chaos/storage.js';
import { ACQUIRE_SETTINGS, PERMIT_LIMIT, READ_WRITE, SEMAPHORE, lockResource, type SectionKind } from '../../chaos/workloads.js';
import type { Lock, Redlock } from '../../src/index.js';

export interface WorkloadResult {
  readonly verdict: Verdict;
  /** Sections that reached the storage, by kind. */
  readonly sections: Readonly<Partial<Record<SectionKind, number>>>;
  /** Acquires that gave up (an ExecutionError), e.g. while a quorum was out of reach. */
  readonly failed: number;
}

const WORKERS = 4;
const RESOURCES = 2;
const TTL_MS = 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `durationMs` of sections by WORKERS workers, each on `makeRedlock()`'s Redlock, with these faults
 * on `masters`: master 0 paused from 20 % to 40 % of the run; master 1 killed at 50 % and started
 * again (empty) at 70 %. `isExecutionError` tells an acquire that gave up from a defect.
 */
export async function shortWorkload(
  masters: readonly RedisMaster[],
  makeRedlock: (worker: number) => Redlock,
  isExecutionError: (error: unknown) => boolean,
  durationMs = 3_000,
): Promise<WorkloadResult> {
  const storage = new Storage(false);
  const sections: Partial<Record<SectionKind, number>> = {};
  let failed = 0;
  const deadline = Date.now() + durationMs;

  const faults = (async () => {
    await sleep(durationMs * 0.2);
    masters[0]!.pause();
    await sleep(durationMs * 0.2);
    masters[0]!.resume();
    await sleep(durationMs * 0.1);
    await masters[1]!.kill();
    await sleep(durationMs * 0.2);
    await masters[1]!.heal();
  })();

  const worker = async (index: number): Promise<void> => {
    const redlock = makeRedlock(index);
    redlock.on('error', () => undefined); // faults are expected; the checker tells the story
    const semaphore = redlock.semaphore(SEMAPHORE, PERMIT_LIMIT);
    const readWrite = redlock.readWrite(READ_WRITE);
    const serve = (request: Parameters<Storage['serve']>[1]): StorageReply => storage.serve(index, request);

    /** A section: its first request (a read), a short delay, its last (a write or a leave), unless its lease is gone by then. */
    const section = async (kind: SectionKind, resource: string, lock: Lock, signal: AbortSignal): Promise<void> => {
      const read = serve({ op: 'read', resource });
      await sleep(5 + Math.random() * 15);
      if (signal.aborted || Date.now() >= lock.expiration) return;
      const held = { resource, value: lock.value, start: read.at, expiration: lock.expiration };
      const { lease } = lock;
      if (lease.type === 'lock') serve({ op: 'write', value: read.value + 1, section: { kind: kind as 'lock' | 'write', ...held, readVersion: read.version } });
      else if (lease.type === 'read') serve({ op: 'leave', section: { kind: 'read', ...held, readVersion: read.version } });
      else serve({ op: 'leave', section: { kind: 'permit', ...held, limit: lease.limit, slot: lease.slot } });
      sections[kind] = (sections[kind] ?? 0) + 1;
    };

    while (Date.now() < deadline) {
      const pick = Math.random();
      try {
        if (pick < 0.4) {
          const resource = lockResource(Math.floor(Math.random() * RESOURCES));
          await redlock.using(resource, TTL_MS, (signal, lock) => section('lock', resource, lock, signal));
        } else if (pick < 0.65) {
          await semaphore.using(TTL_MS, (signal, lock) => section('permit', SEMAPHORE, lock, signal));
        } else if (pick < 0.85) {
          await readWrite.read.using(TTL_MS, (signal, lock) => section('read', READ_WRITE, lock, signal));
        } else {
          await readWrite.write.using(TTL_MS, (signal, lock) => section('write', READ_WRITE, lock, signal));
        }
      } catch (error) {
        if (!isExecutionError(error)) throw error;
        failed++;
      }
    }
    await redlock.quit();
  };

  const settled = await Promise.allSettled([faults, ...Array.from({ length: WORKERS }, (_, index) => worker(index))]);
  const crashed = settled.find((outcome) => outcome.status === 'rejected');
  if (crashed) throw crashed.reason;
  const written = new Set(storage.sections.map((s) => s.resource));
  const counters = new Map([...written].map((resource) => [resource, storage.counter(resource)]));
  return { verdict: check(storage.sections, counters), sections, failed };
}

/** The settings every worker's Redlock takes (the chaos workers' own). */
export const WORKLOAD_SETTINGS = ACQUIRE_SETTINGS;
