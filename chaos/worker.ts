/**
 * A chaos worker process: until told to stop, run critical sections of the three workloads
 * (workloads.ts), each picked at random: a plain lock on a random resource, a semaphore's permit, or
 * a read-write lock's read or write hold, each with using(). Writers (locks, write holds)
 * read-modify-write their resource's counter in the storage (the parent process, over IPC: outside
 * Redis, and atomic per request like a database) with a short delay in between; readers read it and
 * permit holders touch nothing, then each says it left. A section whose lease was lost before its
 * last request is abandoned: nothing written, nothing recorded. With CHAOS_FENCING=1 locks and write
 * holds are fenced, writes carry the token, and the storage refuses a token lower than the largest
 * it has seen (counted as fenced off). The safety oracle (oracle-watch.ts) checks every lease
 * against the real masters, and the runner's schedule starts probes (probes.ts) here: bursts,
 * stalls, late extends, nested locks.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock, type Lock } from '../src/index.js';
import { OracleWatch } from './oracle-watch.js';
import { Probes, type ProbeRequest } from './probes.js';
import type { StorageReply, StorageRequest } from './storage.js';
import { lockResource, PERMIT_LIMIT, READ_SHARE, READ_WRITE, SEMAPHORE, WORKLOADS, type SectionKind, type SectionStats } from './workloads.js';

const nodes = (process.env['CHAOS_NODES'] ?? '').split(',');
const resources = Number(process.env['CHAOS_RESOURCES'] ?? 3);
const ttlMs = Number(process.env['CHAOS_TTL_MS'] ?? 1_000);
const worker = Number(process.env['CHAOS_WORKER'] ?? 0);
const fencing = process.env['CHAOS_FENCING'] === '1';
/** The real masters' ports, in the order of CHAOS_NODES (which are their proxies). */
const masterPorts = (process.env['CHAOS_MASTERS'] ?? '').split(',').map(Number);

process.on('unhandledRejection', (reason) => {
  process.send?.({ type: 'crash', message: `unhandled rejection: ${String(reason)}` });
  process.exit(1);
});

const redlock = new Redlock(nodes, {
  nodeTimeout: 100,
  retryCount: 20,
  retryDelay: 50,
  retryJitter: 50,
  automaticExtensionThreshold: 400,
  restartGuard: { graceMs: ttlMs + 500 },
});
redlock.on('error', () => undefined); // faults are expected; outcomes and the checker tell the story
const watch = new OracleWatch(worker, redlock, nodes, masterPorts);
const probes = new Probes(worker, redlock, ttlMs, watch);
const running = new Set<Promise<void>>();

let stopping = false;
const pending = new Map<number, (reply: StorageReply) => void>();
let requests = 0;
process.on('message', (message: { type: string; id: number } & StorageReply & { request?: ProbeRequest }) => {
  if (message.type === 'stop') stopping = true;
  else if (message.type === 'storage') pending.get(message.id)?.(message);
  else if (message.type === 'probe' && message.request) {
    const { id, request } = message;
    let replied = false;
    const run = probes
      .run(request, (answer) => {
        if (replied) return;
        replied = true;
        process.send?.({ type: 'probe', id, ...answer });
      })
      .catch((error: unknown) => {
        if (!replied) process.send?.({ type: 'probe', id, ok: false, detail: String(error) });
      })
      .finally(() => running.delete(run));
    running.add(run);
  }
});

function storage(request: StorageRequest): Promise<StorageReply> {
  const id = requests++;
  return new Promise((resolve) => {
    pending.set(id, (reply) => {
      pending.delete(id);
      resolve(reply);
    });
    process.send!({ type: 'storage', id, ...request });
  });
}

const noStats = (): SectionStats => ({ attempts: 0, acquired: 0, failed: 0, abandoned: 0, fencedOff: 0, acquireMs: [] });
const stats: Record<SectionKind, SectionStats> = { lock: noStats(), permit: noStats(), read: noStats(), write: noStats() };
const semaphore = redlock.semaphore(SEMAPHORE, PERMIT_LIMIT);
const readWrite = redlock.readWrite(READ_WRITE);

/** One section under `lock`: its first request (a read), a short delay, its last request (a write, or a leave). */
async function section(kind: SectionKind, resource: string, signal: AbortSignal, lock: Lock, counts: SectionStats): Promise<void> {
  const read = await storage({ op: 'read', resource });
  await sleep(5 + Math.random() * 15);
  // The last moment to learn the lease is gone: past it, a pause cannot be told from work.
  if (signal.aborted || Date.now() >= lock.expiration) {
    counts.abandoned++;
    return;
  }
  const { lease } = lock;
  if (lease.type !== (kind === 'write' ? 'lock' : kind)) throw new Error(`a ${kind} section's lease is a ${lease.type}`);
  const held = { resource, value: lock.value, start: read.at, expiration: lock.expiration };
  if (lease.type === 'lock') {
    const written = { kind: kind as 'lock' | 'write', ...held, readVersion: read.version, ...(fencing ? { token: lock.fencingToken! } : {}) };
    const { ok } = await storage({ op: 'write', value: read.value + 1, section: written });
    if (!ok) counts.fencedOff++;
  } else if (lease.type === 'read') {
    await storage({ op: 'leave', section: { kind: 'read', ...held, readVersion: read.version } });
  } else {
    await storage({ op: 'leave', section: { kind: 'permit', ...held, limit: lease.limit, slot: lease.slot } });
  }
}

while (!stopping) {
  const workload = WORKLOADS[Math.floor(Math.random() * WORKLOADS.length)]!;
  const kind: SectionKind = workload === 'lock' ? 'lock' : workload === 'semaphore' ? 'permit' : Math.random() < READ_SHARE ? 'read' : 'write';
  const resource = kind === 'lock' ? lockResource(Math.floor(Math.random() * resources)) : kind === 'permit' ? SEMAPHORE : READ_WRITE;
  const counts = stats[kind];
  const requested = performance.now();
  counts.attempts++;
  const routine = async (signal: AbortSignal, lock: Lock): Promise<void> => {
    counts.acquired++;
    counts.acquireMs.push(performance.now() - requested);
    await section(kind, resource, signal, lock, counts);
  };
  try {
    if (kind === 'lock') await redlock.using(resource, ttlMs, { fencing }, routine);
    else if (kind === 'permit') await semaphore.using(ttlMs, routine);
    else if (kind === 'read') await readWrite.read.using(ttlMs, routine);
    else await readWrite.write.using(ttlMs, { fencing }, routine);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    counts.failed++;
  }
}
await Promise.allSettled(running);
await probes.settle();
await watch.close();
await redlock.quit();
process.send?.({ type: 'stats', worker, sections: stats, oracle: watch.counts });
process.disconnect();
// After quit() nothing of the library's should keep this process alive; if something does, say what.
setTimeout(() => {
  process.stderr.write(`chaos worker ${worker} still alive 5 s after quit(): ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
}, 5_000).unref();
