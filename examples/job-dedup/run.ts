/**
 * `npm run example:job-dedup` — three worker processes, the same 50 jobs given to each, every job
 * run exactly once.
 *
 * Each worker goes through the whole list in the same order (the worst case: all three reach for
 * the same job at once) and runs a job only if it gets the job's lock at the first try and finds no
 * "done" marker (worker.ts). Every run appends to a ledger in Redis; afterwards the ledger must hold
 * each job exactly once. Exits 0 only then. Masters: REDLOCK_NODES, or five local redis-servers.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { masters } from '../masters.js';
import type { StartMessage, WorkerReport } from './worker.js';

const WORKERS = 3;
const JOBS = Array.from({ length: 50 }, (_, i) => `job-${String(i + 1).padStart(2, '0')}`);

const cluster = await masters();
const namespace = `job-dedup-example:${randomUUID()}`;
// The job store (the workers' ledger and done markers) is the first master, to stay self-contained.
const store = createClient({ url: cluster.urls[0]! });
await store.connect();
const children: ChildProcess[] = [];

/** Fork a worker; resolves once it is connected and waiting for the job list. */
async function startWorker(name: string): Promise<{ child: ChildProcess; report: Promise<WorkerReport> }> {
  const child = fork(fileURLToPath(new URL('./worker.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, REDLOCK_NODES: cluster.urls.join(','), STORE_URL: cluster.urls[0], JOB_NAMESPACE: namespace, WORKER: name },
  });
  children.push(child);
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`))));
  exited.catch(() => undefined);
  const nextMessage = (): Promise<unknown> => Promise.race([once(child, 'message').then(([message]: unknown[]) => message), exited]);
  await nextMessage(); // { type: 'ready' }
  const report = nextMessage() as Promise<WorkerReport>;
  report.catch(() => undefined); // awaited below; a worker that dies early fails the run there
  return { child, report };
}

let ok = false;
try {
  const workers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => startWorker(`worker-${i + 1}`)));
  console.log(`${WORKERS} workers, ${JOBS.length} jobs (${JOBS[0]} … ${JOBS.at(-1)}), every worker given all of them in the same order`);
  const startMs = performance.now();
  for (const { child } of workers) child.send({ type: 'start', jobs: JOBS } satisfies StartMessage);
  const reports = await Promise.all(workers.map(({ report }) => report));
  const elapsedMs = Math.round(performance.now() - startMs);
  // Let them quit on their own (their connections closed); any still running after 5 s is killed below.
  const exits = children.filter((child) => child.exitCode === null).map((child) => once(child, 'exit'));
  await Promise.race([Promise.all(exits), sleep(5_000, undefined, { ref: false })]);
  console.log(`all workers done in ${elapsedMs} ms:`);
  for (const report of reports) {
    console.log(
      `  ${report.worker} ran ${report.ran.length} jobs; ${report.refused} acquires refused, ${report.alreadyDone} jobs found done ` +
        `(${report.passes} pass${report.passes === 1 ? '' : 'es'} over the list)`,
    );
  }

  const ledger = await store.lRange(`${namespace}:ledger`, 0, -1);
  const runs = new Map<string, number>();
  for (const entry of ledger) {
    const job = entry.split(' ')[0]!;
    runs.set(job, (runs.get(job) ?? 0) + 1);
  }
  const twice = [...runs].filter(([, count]) => count > 1).map(([job]) => job);
  const missing = JOBS.filter((job) => !runs.has(job));
  const markers = await Promise.all(JOBS.map((job) => store.exists(`${namespace}:done:${job}`)));
  const marked = markers.filter((exists) => exists === 1).length;
  const reported = reports.reduce((total, report) => total + report.ran.length, 0);
  console.log(
    `ledger: ${ledger.length} runs of ${runs.size} distinct jobs; run twice: ${twice.length ? twice.join(', ') : 'none'}; ` +
      `never run: ${missing.length ? missing.join(', ') : 'none'}; ${marked} done markers; workers reported ${reported} runs`,
  );
  ok = ledger.length === JOBS.length && twice.length === 0 && missing.length === 0 && marked === JOBS.length && reported === JOBS.length;
  console.log(ok ? 'every job ran exactly once' : 'UNEXPECTED: some job did not run exactly once');
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await store.del([`${namespace}:ledger`, ...JOBS.map((job) => `${namespace}:done:${job}`)]);
  await store.close();
  cluster.stop();
}
process.exit(ok ? 0 : 1);
