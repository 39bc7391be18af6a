/**
 * S1 — sequential acquire + release, one worker, 5 local masters: this library against the raw
 * floor (bare node-redis EVALSHA fan-out to all 5, then EVALSHA release: no library logic).
 * Interleaved in rounds so machine noise hits both alike. The side-by-side harness with peers
 * (node-redlock, redis-semaphore) and more scenarios is the performance issue's work.
 *
 *   npm run bench -- [--iterations 5000]
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import * as hdr from 'hdr-histogram-js';
import { createClient } from 'redis';
import { Redlock } from '../src/index.js';
import { encodeBatch, lockScript } from '../src/scripts/index.js';
import { startMasters } from '../test/harness/redis-server.js';

const iterationsArg = process.argv.indexOf('--iterations');
const ITERATIONS = iterationsArg > 0 ? Number(process.argv[iterationsArg + 1]) : 5_000;
const ROUNDS = 10;

const masters = await startMasters(5);
const redlock = new Redlock(masters.map((m) => m.url));
const unbatched = new Redlock(masters.map((m) => m.url), { batching: false });
const raw = await Promise.all(masters.map((m) => createClient({ url: m.url }).connect()));
try {
  await Promise.all(raw.map((c) => c.scriptLoad(lockScript.source)));
  type Runner = (i: number) => Promise<void>;
  const runners: Record<string, Runner> = {
    'redlock-quorum': async (i) => {
      const lock = await redlock.acquire(`bench:s1:${i}`, 10_000);
      await lock.release();
    },
    'redlock-quorum (batching off)': async (i) => {
      const lock = await unbatched.acquire(`bench:s1:u:${i}`, 10_000);
      await lock.release();
    },
    'raw floor (node-redis EVALSHA ×5)': async (i) => {
      const key = `bench:s1:raw:${i}`;
      const value = randomBytes(16).toString('hex');
      const acquire = ['EVALSHA', lockScript.sha, ...encodeBatch([{ kind: 'acquire', keys: [key], value, ttlMs: 10_000 }])];
      const release = ['EVALSHA', lockScript.sha, ...encodeBatch([{ kind: 'release', keys: [key], value, ttlMs: 10_000 }])];
      await Promise.all(raw.map((c) => c.sendCommand(acquire)));
      await Promise.all(raw.map((c) => c.sendCommand(release)));
    },
  };
  const histograms = Object.fromEntries(
    Object.keys(runners).map((name) => [name, hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: 3 })]),
  );
  for (const run of Object.values(runners)) for (let i = 0; i < 500; i++) await run(i); // warm-up
  const perRound = Math.ceil(ITERATIONS / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(runners)) {
      for (let i = 0; i < perRound; i++) {
        const start = performance.now();
        await run(round * perRound + i);
        histograms[name]!.recordValue(Math.max(1, Math.round((performance.now() - start) * 1000)));
      }
    }
  }
  const us = (h: hdr.Histogram, p: number): string => `${(h.getValueAtPercentile(p) / 1000).toFixed(3)}`;
  console.log(`\nS1 sequential acquire+release, ${perRound * ROUNDS} per library, 5 local masters`);
  console.log(`${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}, Node ${process.version}\n`);
  console.log('| library | p50 ms | p90 ms | p99 ms | p99.9 ms |');
  console.log('|---|---|---|---|---|');
  for (const [name, h] of Object.entries(histograms)) {
    console.log(`| ${name} | ${us(h, 50)} | ${us(h, 90)} | ${us(h, 99)} | ${us(h, 99.9)} |`);
  }
} finally {
  await redlock.quit();
  await unbatched.quit();
  await Promise.all(raw.map((c) => c.close()));
  for (const master of masters) master.stop();
}
