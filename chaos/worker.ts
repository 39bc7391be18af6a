/**
 * A chaos worker process: until told to stop, lock a random resource with using(), read-modify-
 * write its counter file (outside Redis) with a short delay, and report each critical section.
 * A section whose lock was lost before the write is abandoned, not written. With CHAOS_FENCING=1
 * locks are fenced, the file also keeps the largest token written, and a write with a lower token
 * is refused (counted as fenced off).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock } from '../src/index.js';

const nodes = (process.env['CHAOS_NODES'] ?? '').split(',');
const dir = process.env['CHAOS_DIR'] ?? '';
const resources = Number(process.env['CHAOS_RESOURCES'] ?? 3);
const ttlMs = Number(process.env['CHAOS_TTL_MS'] ?? 1_000);
const worker = Number(process.env['CHAOS_WORKER'] ?? 0);
const fencing = process.env['CHAOS_FENCING'] === '1';

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

let stopping = false;
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') stopping = true;
});

const stats = { attempts: 0, acquired: 0, failed: 0, abandoned: 0, fencedOff: 0, acquireMs: [] as number[] };
while (!stopping) {
  const resource = `chaos:r${Math.floor(Math.random() * resources)}`;
  const requested = performance.now();
  stats.attempts++;
  try {
    await redlock.using(resource, ttlMs, { fencing }, async (signal, lock) => {
      stats.acquired++;
      stats.acquireMs.push(performance.now() - requested);
      const start = Date.now();
      // The "storage": a file holding the counter and, with fencing, the largest token written.
      const file = join(dir, resource.replace(':', '-'));
      const value = Number(readFileSync(file, 'utf8').split(' ')[0]);
      await sleep(5 + Math.random() * 15);
      // The last moment to learn the lock is gone: past it, a pause cannot be told from work.
      if (signal.aborted || Date.now() >= lock.expiration) {
        stats.abandoned++;
        return;
      }
      if (fencing) {
        // The storage's own check: a write carrying a token below the largest seen is refused.
        const highest = Number(readFileSync(file, 'utf8').split(' ')[1] ?? 0);
        if (lock.fencingToken! < highest) {
          stats.fencedOff++;
          return;
        }
      }
      writeFileSync(file, fencing ? `${value + 1} ${lock.fencingToken}` : String(value + 1));
      const end = Date.now();
      const section = { type: 'section', worker, resource, value: lock.value, start, end, expiration: lock.expiration };
      process.send?.(fencing ? { ...section, token: lock.fencingToken } : section);
    });
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    stats.failed++;
  }
}
await redlock.quit();
process.send?.({ type: 'stats', worker, ...stats });
process.disconnect();
// After quit() nothing of the library's should keep this process alive; if something does, say what.
setTimeout(() => {
  process.stderr.write(`chaos worker ${worker} still alive 5 s after quit(): ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
}, 5_000).unref();
