/**
 * `npm run demo`: five throwaway masters, four worker processes incrementing one counter (a file,
 * outside Redis) under the lock for DEMO_DURATION_MS (10 s). Along the way one master is paused
 * (SIGSTOP) and resumed, and another is killed (-9) half-way. A live view shows the progress,
 * what a PING probe sees of each master, and the workers' counts and `redlock.stats()` (sent by
 * IPC); then the figures, and whether the counter equals the number of critical sections (exit 1
 * if not). Stops every process and server it started, by pid, also on Ctrl-C.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import type { RedlockStats } from '../src/index.js';
import { externalPorts, provisionLocalServer } from '../lab/backend.js';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import type { GoMessage, WorkerMessage } from './messages.js';
import { MasterProbe, PROBE_TIMEOUT_MS } from './probe.js';
import { createView, labelled, masterTable, seconds, type MasterRow, type Snapshot } from './view.js';

const WORKERS = 4;
const DURATION_MS = Number(process.env['DEMO_DURATION_MS'] ?? 10_000);
if (!(DURATION_MS > 0)) throw new RangeError(`DEMO_DURATION_MS must be a positive number of ms, got ${process.env['DEMO_DURATION_MS']}`);
/** Which master suffers what, and when (as a fraction of the run). */
const PAUSED = 4;
const PAUSE_AT = 0.2;
const RESUME_AT = 0.4;
const KILLED = 2;
const KILL_AT = 0.5;

interface Worker {
  process: ChildProcess;
  latest: Extract<WorkerMessage, { type: 'progress' | 'done' }> | undefined;
  ready: Promise<void>;
  done: Promise<Extract<WorkerMessage, { type: 'done' }>>;
}

/** What the demo does with a master; REDLOCK_NODES masters (e.g. docker compose) are not ours to stop. */
type DemoMaster = Pick<RedisMaster, 'port' | 'url' | 'pid' | 'stop' | 'pause' | 'resume' | 'kill'>;
const EXTERNAL = process.env['REDLOCK_NODES'] ? externalPorts(process.env['REDLOCK_NODES']) : undefined;

/** The server the masters run: Redis 7 by default (REDLOCK_TEST_SERVER picks another), provisioned if this machine has none. */
function demoServer(): string {
  return provisionLocalServer((line) => console.log(`server: ${line}`)).binary;
}
let masters: DemoMaster[] = [];
const workers: Worker[] = [];
const probes: MasterProbe[] = [];
const timers: NodeJS.Timeout[] = [];
let workDir: string | undefined = undefined;
const view = createView(process.stdout);

/** Synchronous, idempotent: kill the workers and masters by pid, remove the files. */
function cleanUp(): void {
  view.stop();
  for (const timer of timers) clearTimeout(timer);
  for (const worker of workers) if (worker.process.exitCode === null && worker.process.signalCode === null) worker.process.kill('SIGKILL');
  for (const master of masters) master.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}
process.on('exit', cleanUp);
const starting: Promise<DemoMaster[]> = EXTERNAL
  ? Promise.resolve(
      EXTERNAL.map((port) => ({
        port,
        url: `redis://127.0.0.1:${port}`,
        pid: undefined,
        stop: () => undefined,
        pause: () => undefined,
        resume: () => undefined,
        kill: () => Promise.resolve(),
      })),
    )
  : startMasters(5, { server: demoServer() });
function interrupted(signal: NodeJS.Signals): void {
  cleanUp();
  process.stdout.write(`\n${signal}: workers and masters stopped\n`);
  const code = signal === 'SIGINT' ? 130 : 143;
  if (masters.length > 0) process.exit(code);
  // Interrupted while the masters start: wait for them, to stop them too.
  void starting.then((started) => started.forEach((master) => master.stop()), () => undefined).finally(() => process.exit(code));
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => interrupted(signal));

masters = await starting;
workDir = mkdtempSync(join(tmpdir(), 'redlock-demo-'));
const counterFile = join(workDir, 'counter');
writeFileSync(counterFile, '0');
const label = (index: number): string => `M${index + 1}`;

try {
  view.event(
    `5 masters${EXTERNAL ? ' from REDLOCK_NODES' : ''} on ports ${masters.map((m) => m.port).join(', ')}; ${WORKERS} workers for ${seconds(DURATION_MS)}`,
  );
  view.event(
    EXTERNAL
      ? 'plan: these masters are not ours to pause or kill — try `docker compose pause redis-5` or `docker compose kill redis-3` ' +
          'meanwhile; a PING probe shows what a client sees of each master'
      : `plan: SIGSTOP ${label(PAUSED)} at ${seconds(PAUSE_AT * DURATION_MS)}, SIGCONT at ${seconds(RESUME_AT * DURATION_MS)}, ` +
          `kill -9 ${label(KILLED)} at ${seconds(KILL_AT * DURATION_MS)}; a PING probe shows what a client sees of each master`,
  );
  view.event(`starting ${WORKERS} worker processes…`);
  for (let i = 0; i < WORKERS; i++) workers.push(startWorker(counterFile));
  await Promise.all(workers.map((w) => w.ready));

  let t0 = performance.now();
  const at = (): string => seconds(performance.now() - t0).padStart(6);
  for (const [index, master] of masters.entries()) {
    const probe = new MasterProbe(master.port, (from, to) =>
      view.event(`${at()}  probe: ${label(index)} ${from} → ${to}${to === 'paused' ? ` (connection accepted, no PONG within ${PROBE_TIMEOUT_MS} ms)` : ''}`),
    );
    probes.push(probe);
  }
  await Promise.all(probes.map((probe) => probe.start()));

  t0 = performance.now();
  const go: GoMessage = { type: 'go', durationMs: DURATION_MS };
  for (const worker of workers) worker.process.send(go);
  const plan: Array<[number, () => void]> = [
    [PAUSE_AT, () => {
      view.event(`${at()}  SIGSTOP ${label(PAUSED)} (port ${masters[PAUSED]!.port}, pid ${masters[PAUSED]!.pid})`);
      masters[PAUSED]!.pause();
    }],
    [RESUME_AT, () => {
      view.event(`${at()}  SIGCONT ${label(PAUSED)} (port ${masters[PAUSED]!.port})`);
      masters[PAUSED]!.resume();
    }],
    [KILL_AT, () => {
      view.event(`${at()}  kill -9 ${label(KILLED)} (port ${masters[KILLED]!.port}, pid ${masters[KILLED]!.pid})`);
      void masters[KILLED]!.kill();
    }],
  ];
  if (!EXTERNAL) for (const [fraction, action] of plan) timers.push(setTimeout(action, fraction * DURATION_MS));

  /** Samples of (time, sections) over the last second, for the rate. */
  const samples: Array<[number, number]> = [[t0, 0]];
  const render = (): void => {
    const now = performance.now();
    const snapshot = snapshotOf(workers.map((w) => w.latest), now - t0);
    samples.push([now, snapshot.sections]);
    while (samples.length > 2 && samples[1]![0] <= now - 1000) samples.shift();
    const [firstAt, firstSections] = samples[0]!;
    snapshot.sectionsPerSecond = now > firstAt ? ((snapshot.sections - firstSections) * 1000) / (now - firstAt) : 0;
    view.update(snapshot);
  };
  const ticker = setInterval(render, view.intervalMs);
  timers.push(ticker);
  if (view.live) render();

  const results = await Promise.all(workers.map((w) => w.done));
  const elapsedMs = performance.now() - t0;
  clearInterval(ticker);
  render(); // the final counts, not the last periodic report (sent up to PROGRESS_MS before each worker ended)
  for (const timer of timers) clearTimeout(timer);
  await Promise.all(probes.map((probe) => probe.stop()));
  view.stop();

  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  for (const ms of results.flatMap((r) => r.acquireMs)) histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  const sum = (pick: (r: (typeof results)[number]) => number): number => results.reduce((total, r) => total + pick(r), 0);
  const sections = sum((r) => r.sections);
  const counter = Number(readFileSync(counterFile, 'utf8'));
  const rows: Array<[string, string]> = [
    ['successful acquisitions', String(sum((r) => r.acquireMs.length))],
    ['failed acquisitions: held by others in every retry', String(sum((r) => r.heldByOthers))],
    ['failed acquisitions: too few masters answered', String(sum((r) => r.mastersUnavailable))],
    ['critical sections completed', String(sections)],
    ['sections per second', (sections / (Math.min(elapsedMs, DURATION_MS) / 1000)).toFixed(0)],
    ['sections skipped: validity ran out before the write', String(sum((r) => r.expiredBeforeWrite))],
    ['acquire latency p50', `${(histogram.getValueAtPercentile(50) / 1000).toFixed(2)} ms`],
    ['acquire latency p99', `${(histogram.getValueAtPercentile(99) / 1000).toFixed(2)} ms`],
    ['counter (kept outside Redis)', String(counter)],
    ['counter equals sections completed', counter === sections ? 'yes' : 'NO — lost update'],
  ];
  const perMaster = mastersOf(results.map((r) => r.stats)).map((row, index) => ({ ...row, seen: probes[index]!.seen }));
  console.log(`\nanswers per master (summed over the ${WORKERS} workers' redlock.stats()):\n${masterTable(perMaster)}`);
  console.log(`\n${labelled(rows)}`);
  if (counter !== sections) process.exitCode = 1;
} finally {
  await Promise.all(probes.map((probe) => probe.stop()));
  cleanUp();
}

function startWorker(counter: string): Worker {
  const child = fork(fileURLToPath(new URL('./worker.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, DEMO_NODES: masters.map((m) => m.url).join(','), DEMO_COUNTER: counter },
  });
  const worker: Worker = { process: child, latest: undefined, ready: undefined!, done: undefined! };
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => {
      // Ctrl-C reaches the whole process group: the workers may see it before we do.
      if (signal === 'SIGINT' || signal === 'SIGTERM' || signal === 'SIGHUP') interrupted(signal);
      reject(new Error(`worker ${child.pid} exited (${signal ?? code}) before reporting`));
    }),
  );
  worker.ready = Promise.race([
    new Promise<void>((resolve) =>
      child.on('message', (m: WorkerMessage) => {
        if (m.type === 'ready') resolve();
      }),
    ),
    exited,
  ]);
  worker.done = Promise.race([
    new Promise<Extract<WorkerMessage, { type: 'done' }>>((resolve) =>
      child.on('message', (m: WorkerMessage) => {
        // The final figures are the latest progress too: the view's last line then says what the summary says.
        if (m.type === 'progress' || m.type === 'done') worker.latest = m;
        if (m.type === 'done') resolve(m);
      }),
    ),
    exited,
  ]);
  // Whichever of these nobody awaits any more (an early failure elsewhere) must not crash the demo.
  worker.ready.catch(() => undefined);
  worker.done.catch(() => undefined);
  return worker;
}

/** Per master: the live probe state and the answers summed over the workers' latest stats. */
function mastersOf(stats: ReadonlyArray<RedlockStats | undefined>): MasterRow[] {
  return masters.map((master, index) => {
    const row: MasterRow = {
      label: label(index),
      port: master.port,
      state: probes[index]?.state ?? 'up',
      rttMs: probes[index]?.rttMs,
      granted: 0,
      refused: 0,
      timeout: 0,
      error: 0,
    };
    for (const s of stats) {
      const answers = s?.masters[index];
      if (!answers) continue;
      row.granted += answers.granted;
      row.refused += answers.refused;
      row.timeout += answers.timeout;
      row.error += answers.error;
    }
    return row;
  });
}

function snapshotOf(latest: ReadonlyArray<Worker['latest']>, elapsedMs: number): Snapshot {
  const sum = (pick: (m: NonNullable<Worker['latest']>) => number): number =>
    latest.reduce((total, m) => total + (m ? pick(m) : 0), 0);
  return {
    elapsedMs,
    totalMs: DURATION_MS,
    sections: sum((m) => m.sections),
    sectionsPerSecond: 0,
    succeeded: sum((m) => m.stats.acquisitions.succeeded),
    failed: sum((m) => m.stats.acquisitions.failed),
    skipped: sum((m) => m.expiredBeforeWrite),
    masters: mastersOf(latest.map((m) => m?.stats)),
  };
}
