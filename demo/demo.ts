/**
 * `npm run demo`: five throwaway masters, four worker processes incrementing one counter (a file,
 * outside Redis) under the lock for ~10 s, one master killed half-way; then the figures, and
 * whether the counter equals the number of critical sections. Stops everything it started.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { startMasters } from '../test/harness/redis-server.js';

interface WorkerReport {
  sections: number;
  failedAcquires: number;
  expiredBeforeWrite: number;
  acquireMs: number[];
}

const WORKERS = 4;
const DURATION_MS = Number(process.env['DEMO_DURATION_MS'] ?? 10_000);
const KILLED = 2;

const masters = await startMasters(5);
const workDir = mkdtempSync(join(tmpdir(), 'redlock-demo-'));
const counterFile = join(workDir, 'counter');
writeFileSync(counterFile, '0');
const workers: ChildProcess[] = [];
try {
  console.log(`5 masters on ports ${masters.map((m) => m.port).join(', ')}; ${WORKERS} workers for ${DURATION_MS / 1000} s`);
  const reports = Array.from({ length: WORKERS }, () => {
    const worker = fork(fileURLToPath(new URL('./worker.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        DEMO_NODES: masters.map((m) => m.url).join(','),
        DEMO_COUNTER: counterFile,
        DEMO_DURATION_MS: String(DURATION_MS),
      },
    });
    workers.push(worker);
    return new Promise<WorkerReport>((resolve, reject) => {
      worker.once('message', (message) => resolve(message as WorkerReport));
      worker.once('exit', (code) => reject(new Error(`worker ${worker.pid} exited with ${code} before reporting`)));
    });
  });
  const killer = setTimeout(() => {
    console.log(`${(DURATION_MS / 2000).toFixed(1)} s: kill -9 master ${KILLED} (port ${masters[KILLED]!.port})`);
    void masters[KILLED]!.kill();
  }, DURATION_MS / 2);
  const results = await Promise.all(reports);
  clearTimeout(killer);

  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  for (const ms of results.flatMap((r) => r.acquireMs)) histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  const sum = (pick: (r: WorkerReport) => number): number => results.reduce((total, r) => total + pick(r), 0);
  const sections = sum((r) => r.sections);
  const counter = Number(readFileSync(counterFile, 'utf8'));
  const rows: Array<[string, string]> = [
    ['successful acquisitions', String(sum((r) => r.acquireMs.length))],
    ['failed acquisitions (quorum not reached in retries)', String(sum((r) => r.failedAcquires))],
    ['critical sections completed', String(sections)],
    ['sections skipped: validity ran out before the write', String(sum((r) => r.expiredBeforeWrite))],
    ['acquire latency p50', `${(histogram.getValueAtPercentile(50) / 1000).toFixed(2)} ms`],
    ['acquire latency p99', `${(histogram.getValueAtPercentile(99) / 1000).toFixed(2)} ms`],
    ['counter (kept outside Redis)', String(counter)],
    ['counter equals sections completed', counter === sections ? 'yes' : 'NO — lost update'],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  console.log('\n' + rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n'));
  if (counter !== sections) process.exitCode = 1;
} finally {
  for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL');
  for (const master of masters) master.stop();
  rmSync(workDir, { recursive: true, force: true });
}
