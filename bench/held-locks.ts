/**
 * `npm run bench:held [-- --locks 10000 --seconds 60 --ttl 10000]`: many concurrently held
 * auto-extending locks in one process. Reports the process' CPU use, script calls per second per
 * master (renewals of locks on the same master coalesce), and client memory per held lock.
 * `npm run bench` runs it too, as a child (bench/run.ts), which gets the figures by IPC.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Lock } from '../src/index.js';
import { startMasters } from '../src/testing/redis-server.js';
import { MasterStats } from './master-stats.js';

/** The figures, as sent to bench/run.ts. */
export interface HeldLocks {
  readonly locks: number;
  readonly seconds: number;
  readonly ttlMs: number;
  /** Client heap per held lock; exact only with --expose-gc (`exactMemory`). */
  readonly bytesPerLock: number;
  readonly exactMemory: boolean;
  readonly callsPerSecondPerMaster: readonly number[];
  readonly cpuPercent: number;
  readonly lost: number;
}

const arg = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const LOCKS = arg('locks', 10_000);
const SECONDS = arg('seconds', 60);
const TTL_MS = arg('ttl', 10_000);
const gc = (globalThis as { gc?: () => void }).gc;
// The package as users run it: the build (the script builds first), not the sources through tsx,
// whose keep-names helper gives every closure a property of its own (a hidden class each).
const { Redlock } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');

const masters = await startMasters(5);
const redlock = new Redlock(masters.map((m) => m.url));
const counter = await MasterStats.connect(masters.map((m) => m.url));
try {
  await (await redlock.acquire('warm', 1_000)).release();
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const locks: Lock[] = [];
  for (let i = 0; i < LOCKS; i += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, LOCKS - i) }, (_, j) => redlock.acquire(`held:${i + j}`, TTL_MS, { autoExtend: true }));
    locks.push(...(await Promise.all(batch)));
  }
  gc?.();
  const heapHeld = process.memoryUsage().heapUsed;
  const callsBefore = await counter.read();
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  let lost = 0;
  for (const lock of locks) lock.signal.addEventListener('abort', () => lost++, { once: true });
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1_000));
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  const callsAfter = await counter.read();
  const perMaster = callsAfter.map((after, i) => (after.scriptCalls - callsBefore[i]!.scriptCalls) / (wallMs / 1000));
  const renewalsPerSecond = (LOCKS / ((TTL_MS - 500) / 1000)).toFixed(0);
  const figures: HeldLocks = {
    locks: LOCKS,
    seconds: SECONDS,
    ttlMs: TTL_MS,
    bytesPerLock: (heapHeld - heapBefore) / LOCKS,
    exactMemory: gc !== undefined,
    callsPerSecondPerMaster: perMaster,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
    lost,
  };
  const markdown = [
    `${LOCKS} auto-extending locks held for ${SECONDS} s (ttl ${TTL_MS} ms, renewal at 500 ms left ≈ ${renewalsPerSecond} renewals/s)`,
    `${os.cpus()[0]?.model.trim()} × ${os.cpus().length}, Node ${process.version}${gc ? '' : ' (run with --expose-gc for exact memory)'}`,
    '',
    '| measure | value |',
    '|---|---|',
    `| CPU of this process | ${figures.cpuPercent.toFixed(1)} % of one core |`,
    `| script calls per second per master | ${perMaster.map((c) => c.toFixed(1)).join(', ')} |`,
    `| client heap per held lock | ${figures.bytesPerLock.toFixed(0)} bytes |`,
    `| locks lost | ${lost} |`,
  ].join('\n');
  // Run by bench/run.ts: the figures go to it, which prints them in its Targets block.
  if (process.send) await new Promise((resolve) => process.send!({ type: 'held', ...figures }, undefined, {}, resolve));
  else console.log(`\n${markdown}`);
  // The default run (exact memory) is the one docs/benchmarks.md shows (bench/readme.ts).
  if (gc && process.argv.length <= 2) {
    writeFileSync(fileURLToPath(new URL('./results/held.md', import.meta.url)), `${markdown}\n`);
    console.log('results: bench/results/held.md');
  }
  await Promise.all(locks.map((lock) => lock.release()));
} finally {
  await redlock.quit();
  await counter.close();
  if (process.connected) process.disconnect();
  for (const master of masters) master.stop();
}
