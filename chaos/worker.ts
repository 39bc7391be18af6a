/**
 * A chaos worker process: until told to stop, lock a random resource with using() and read-
 * modify-write its counter in the storage (the parent process, over IPC: outside Redis, and
 * atomic per request like a database) with a short delay in between. A section whose lock was
 * lost before the write is abandoned, not written. With CHAOS_FENCING=1 locks are fenced, writes
 * carry the token, and the storage refuses a token lower than the largest it has seen (counted as
 * fenced off). The safety oracle (oracle-watch.ts) checks every lock against the real masters, and
 * the runner's schedule starts probes (probes.ts) here: bursts, stalls, late extends, nested locks.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock } from '../src/index.js';
import { OracleWatch } from './oracle-watch.js';
import { Probes, type ProbeRequest } from './probes.js';
import type { StorageReply, StorageRequest } from './storage.js';

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

const stats = { attempts: 0, acquired: 0, failed: 0, abandoned: 0, fencedOff: 0, acquireMs: [] as number[] };
while (!stopping) {
  const resource = `chaos:r${Math.floor(Math.random() * resources)}`;
  const requested = performance.now();
  stats.attempts++;
  try {
    await redlock.using(resource, ttlMs, { fencing }, async (signal, lock) => {
      stats.acquired++;
      stats.acquireMs.push(performance.now() - requested);
      const read = await storage({ op: 'read', resource });
      await sleep(5 + Math.random() * 15);
      // The last moment to learn the lock is gone: past it, a pause cannot be told from work.
      if (signal.aborted || Date.now() >= lock.expiration) {
        stats.abandoned++;
        return;
      }
      const { ok } = await storage({
        op: 'write',
        resource,
        value: read.value + 1,
        readVersion: read.version,
        start: read.at,
        lock: lock.value,
        expiration: lock.expiration,
        ...(fencing ? { token: lock.fencingToken! } : {}),
      });
      if (!ok) stats.fencedOff++;
    });
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    stats.failed++;
  }
}
await Promise.allSettled(running);
await probes.settle();
await watch.close();
await redlock.quit();
process.send?.({ type: 'stats', worker, ...stats, oracle: watch.counts });
process.disconnect();
// After quit() nothing of the library's should keep this process alive; if something does, say what.
setTimeout(() => {
  process.stderr.write(`chaos worker ${worker} still alive 5 s after quit(): ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
}, 5_000).unref();
