/**
 * `npm run chaos -- --duration 60 [--seed N] [--workers 4] [--resources 3] [--fencing]`
 *
 * Five masters, each behind a fault proxy, and worker processes contending on a few resources
 * (chaos/worker.ts) for a counter per resource kept in this process (chaos/storage.ts). A seeded
 * fault schedule (printed, so a run can be replayed) applies one or two faults at a time, each for
 * 0.5–2 s: kill -9 a master and start it again empty, SIGSTOP/SIGCONT a master, latency, blackhole
 * and connection resets through its proxy, and SIGSTOP a worker past its ttl. Then the checker
 * (chaos/checker.ts): no two holders of a resource within their validity at once, no write erasing
 * another when both were within their lock's validity (a lost update), no lock key left on a master
 * after the run + ttl, no crash or unhandled rejection in a worker. Exits non-zero on any violation.
 *
 * --fencing: locks take fencing tokens and the checker also requires each resource's tokens to
 * increase from section to section. Fence counters must survive restarts (README, "Fencing tokens"),
 * so the masters then run with AOF `appendfsync always` and a killed master restarts from its AOF.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { createClient } from 'redis';
import { ProxyProcess } from '../bench/faults.js';
import { check } from './checker.js';
import { Storage, type StorageRequest } from './storage.js';
import { FENCE_SUFFIX } from '../src/scripts/index.js';
import { startMasters, type RedisMaster } from '../test/harness/redis-server.js';

const arg = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const DURATION_S = arg('duration', 60);
const SEED = arg('seed', Math.floor(Math.random() * 2 ** 31));
const WORKERS = arg('workers', 4);
const RESOURCES = arg('resources', 3);
const FENCING = process.argv.includes('--fencing');
const TTL_MS = 1_000;

/** mulberry32: a small seeded PRNG, so a fault schedule replays exactly from its seed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface WorkerStats {
  worker: number;
  attempts: number;
  acquired: number;
  failed: number;
  abandoned: number;
  fencedOff: number;
  acquireMs: number[];
}

type Fault = 'kill-restart' | 'pause-master' | 'latency' | 'blackhole' | 'reset' | 'pause-worker';
const FAULTS: readonly Fault[] = ['kill-restart', 'pause-master', 'latency', 'blackhole', 'reset', 'pause-worker'];

const masters: RedisMaster[] = await startMasters(5, FENCING ? { args: ['--appendonly', 'yes', '--appendfsync', 'always'] } : {});
const proxies = await ProxyProcess.start(masters.map((master) => master.port));
const workers: ChildProcess[] = [];
const stats: WorkerStats[] = [];
const crashes: string[] = [];
const applied = new Map<Fault, number>();
let failed = false;

try {
  const replay = `npm run chaos -- --duration ${DURATION_S} --seed ${SEED}${FENCING ? ' --fencing' : ''}`;
  console.log(`chaos: ${DURATION_S} s, seed ${SEED} (replay: ${replay}), ${WORKERS} workers, ${RESOURCES} resources, ttl ${TTL_MS} ms${FENCING ? ', fencing (AOF always)' : ''}`);
  const storage = new Storage(FENCING);
  const done = Array.from({ length: WORKERS }, (_, worker) => {
    const child = fork(fileURLToPath(new URL('./worker.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        CHAOS_NODES: proxies.ports.map((port) => `redis://127.0.0.1:${port}`).join(','),
        CHAOS_RESOURCES: String(RESOURCES),
        CHAOS_TTL_MS: String(TTL_MS),
        CHAOS_WORKER: String(worker),
        CHAOS_FENCING: FENCING ? '1' : '0',
      },
    });
    workers.push(child);
    child.on('message', (message: { type: string } & Record<string, unknown>) => {
      if (message.type === 'storage') {
        const reply = storage.serve(worker, message as unknown as StorageRequest);
        if (child.connected) child.send({ type: 'storage', id: message['id'], ...reply });
      } else if (message.type === 'stats') stats.push(message as unknown as WorkerStats);
      else if (message.type === 'crash') crashes.push(`worker ${worker}: ${String(message['message'])}`);
    });
    return new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        if (code !== 0) {
          const reported = stats.some((s) => s.worker === worker);
          crashes.push(`worker ${worker} exited with ${code ?? signal}${reported ? ' (after reporting its stats: it did not exit after quit())' : ''}`);
        }
        resolve();
      }),
    );
  });

  // The fault schedule: every 1.5–3 s one or two faults on distinct targets.
  const random = prng(SEED);
  const end = Date.now() + DURATION_S * 1000;
  const log: string[] = [];
  while (Date.now() < end - 2_000) {
    await sleep(1_500 + random() * 1_500);
    const count = random() < 0.3 ? 2 : 1;
    const targets = new Set<number>();
    const undo: Array<() => Promise<void>> = [];
    for (let i = 0; i < count; i++) {
      const fault = FAULTS[Math.floor(random() * FAULTS.length)]!;
      let target = Math.floor(random() * 5);
      while (targets.has(target)) target = (target + 1) % 5;
      targets.add(target);
      applied.set(fault, (applied.get(fault) ?? 0) + 1);
      log.push(`${((DURATION_S * 1000 - (end - Date.now())) / 1000).toFixed(1)} s ${fault} ${fault === 'pause-worker' ? `worker ${target % WORKERS}` : `master ${target}`}`);
      undo.push(await applyFault(fault, target));
    }
    await sleep(500 + random() * 1_500); // how long the faults last
    for (const heal of undo) await heal();
  }
  for (const child of workers) if (child.connected) child.send({ type: 'stop' });
  await Promise.race([Promise.all(done), sleep(15_000)]);
  for (const child of workers) if (child.exitCode === null) child.kill('SIGKILL');

  // Checks.
  const verdict = check(storage.sections, new Map(Array.from({ length: RESOURCES }, (_, r) => [`chaos:r${r}`, storage.counter(`chaos:r${r}`)])));
  const violations = [...verdict.violations];
  await sleep(TTL_MS + 200);
  const inspectors = await Promise.all(masters.map((master) => createClient({ url: master.url }).connect()));
  const leftover = (await Promise.all(inspectors.map((client) => client.keys('chaos:*'))))
    .flat()
    .filter((key) => !key.endsWith(FENCE_SUFFIX)); // fence counters are meant to stay

  await Promise.all(inspectors.map((client) => client.close()));
  if (leftover.length > 0) violations.push(`lock keys left after the run + ttl: ${leftover.join(', ')}`);
  violations.push(...crashes);

  // Summary.
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  for (const ms of stats.flatMap((s) => s.acquireMs)) histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  const total = (pick: (s: WorkerStats) => number): number => stats.reduce((sum, s) => sum + pick(s), 0);
  const attempts = total((s) => s.attempts);
  console.log(`\nfault schedule (seed ${SEED}):\n  ${log.join('\n  ')}`);
  console.log('\n| measure | value |\n|---|---|');
  console.log(`| duration, workers, resources | ${DURATION_S} s, ${WORKERS} processes, ${RESOURCES} |`);
  console.log(`| faults applied | ${[...applied].map(([fault, n]) => `${fault} ${n}`).join(', ')} |`);
  console.log(`| critical sections completed | ${storage.sections.length} |`);
  console.log(`| … of them written after their lock's validity (worker paused past its ttl) | ${verdict.pausedPastValidity} |`);
  console.log(`| updates erased by such a late write (without fencing: the hazard fencing tokens cure) | ${verdict.lostUpdates} |`);
  console.log(`| sections abandoned because the lock was lost before the write | ${total((s) => s.abandoned)} |`);
  if (FENCING) console.log(`| writes refused by the storage's fencing-token check | ${total((s) => s.fencedOff)} |`);
  console.log(`| acquire success rate | ${attempts ? ((total((s) => s.acquired) / attempts) * 100).toFixed(1) : '—'} % (${total((s) => s.acquired)} of ${attempts}) |`);
  console.log(`| acquire latency p50 / p99 / max | ${[50, 99, 100].map((p) => (histogram.getValueAtPercentile(p) / 1000).toFixed(1)).join(' / ')} ms |`);
  console.log(`| violations | ${violations.length} |`);
  for (const violation of violations) console.log(`VIOLATION: ${violation}`);
  failed = violations.length > 0 || stats.length !== WORKERS;
  if (stats.length !== WORKERS) console.log(`VIOLATION: only ${stats.length} of ${WORKERS} workers reported`);
} finally {
  for (const child of workers) if (child.exitCode === null) child.kill('SIGKILL');
  await proxies.stop().catch(() => undefined);
  for (const master of masters) master.stop();
}
process.exit(failed ? 1 : 0);

/** Apply a fault; resolves to the function that undoes it. */
async function applyFault(fault: Fault, target: number): Promise<() => Promise<void>> {
  const master = masters[target]!;
  switch (fault) {
    case 'kill-restart':
      await master.kill();
      return async () => {
        await master.heal(); // back: empty, or from its AOF with --fencing
      };
    case 'pause-master':
      master.pause();
      return () => Promise.resolve(master.resume());
    case 'latency':
      await proxies.set(target, 'pass', 25);
      return () => proxies.set(target, 'pass', 0);
    case 'blackhole':
      await proxies.set(target, 'blackhole');
      return async () => {
        await proxies.set(target, 'pass');
        await proxies.reset(target); // a blackholed connection is dead: let the clients reconnect
      };
    case 'reset':
      await proxies.reset(target);
      return () => Promise.resolve();
    case 'pause-worker': {
      const worker = workers[target % WORKERS]!;
      worker.kill('SIGSTOP');
      // Past its ttl (and then some, by the schedule's hold): whatever it held is gone on resume.
      await sleep(TTL_MS + 300);
      return () => Promise.resolve(void worker.kill('SIGCONT'));
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
