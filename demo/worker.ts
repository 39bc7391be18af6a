/**
 * One demo worker process: for DEMO_DURATION_MS, lock the shared counter, read-modify-write it
 * (a file outside Redis) with a short delay, release. Reports its figures to the parent by IPC.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock } from '../src/index.js';

const nodes = (process.env['DEMO_NODES'] ?? '').split(',');
const counterFile = process.env['DEMO_COUNTER'] ?? '';
const durationMs = Number(process.env['DEMO_DURATION_MS'] ?? 10_000);

const redlock = new Redlock(nodes, { retryCount: 20, retryDelay: 15, retryJitter: 15 });
redlock.on('error', () => undefined); // a killed master is expected here; outcomes say the rest

const report = { sections: 0, failedAcquires: 0, expiredBeforeWrite: 0, acquireMs: [] as number[] };
const deadline = Date.now() + durationMs;
while (Date.now() < deadline) {
  const start = performance.now();
  let lock;
  try {
    lock = await redlock.acquire('demo:counter', 1_000);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    report.failedAcquires++;
    continue;
  }
  report.acquireMs.push(performance.now() - start);
  const value = Number(await readFile(counterFile, 'utf8'));
  await sleep(2);
  if (Date.now() < lock.expiration) {
    await writeFile(counterFile, String(value + 1));
    report.sections++;
  } else {
    report.expiredBeforeWrite++; // validity ran out: the write would no longer be protected
  }
  await lock.release();
}
await redlock.quit();
process.send?.(report);
