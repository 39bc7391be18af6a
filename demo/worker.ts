/**
 * One demo worker process: once the parent says `go`, for durationMs lock the shared counter,
 * read-modify-write it (a file outside Redis) with a short delay, release. Sends its counts and
 * `redlock.stats()` to the parent every PROGRESS_MS, and its final figures at the end, by IPC.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock, ResourceLockedError } from '../src/index.js';
import { PROGRESS_MS, type GoMessage, type WorkerCounts, type WorkerMessage } from './messages.js';

if (!process.send) throw new Error('demo/worker.ts runs as a child of demo/demo.ts (npm run demo)');
const nodes = (process.env['DEMO_NODES'] ?? '').split(',');
const counterFile = process.env['DEMO_COUNTER'] ?? '';

// If the parent goes away without stopping us (it normally kills us by pid), stop too.
process.once('disconnect', () => process.exit(0));

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

// Default settings, as a user starts: waiters are woken by releases, so no retry tuning is needed.
const redlock = new Redlock(nodes);
redlock.on('error', () => undefined); // a killed master is expected here; outcomes say the rest

const go = new Promise<GoMessage>((resolve) => process.once('message', (message: GoMessage) => resolve(message)));
await send({ type: 'ready' });
const { durationMs } = await go;

const counts: WorkerCounts = { sections: 0, heldByOthers: 0, mastersUnavailable: 0, expiredBeforeWrite: 0 };
const acquireMs: number[] = [];
const progress = setInterval(() => void send({ type: 'progress', ...counts, stats: redlock.stats() }), PROGRESS_MS);

const deadline = Date.now() + durationMs;
while (Date.now() < deadline) {
  const start = performance.now();
  let lock;
  try {
    lock = await redlock.acquire('demo:counter', 1_000);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    if (error instanceof ResourceLockedError) counts.heldByOthers++;
    else counts.mastersUnavailable++;
    continue;
  }
  acquireMs.push(performance.now() - start);
  const value = Number(await readFile(counterFile, 'utf8'));
  await sleep(2);
  if (Date.now() < lock.expiration) {
    await writeFile(counterFile, String(value + 1));
    counts.sections++;
  } else {
    counts.expiredBeforeWrite++; // validity ran out: the write would no longer be protected
  }
  await lock.release();
}
clearInterval(progress);
await redlock.quit();
await send({ type: 'done', ...counts, acquireMs, stats: redlock.stats() });
process.disconnect();
