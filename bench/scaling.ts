/**
 * `npm run bench:scaling [-- --quick]`: what one lock costs the masters and the client, and a check
 * of the model built on it (docs/scaling.md), against throwaway local masters.
 *
 * Part 1, the costs: 5 masters, ours on URLs (node-redis) alone in a process of its own
 * (bench/scaling-process.ts). For 1, 16, 64 and 256 concurrent workers: a phase of acquires only
 * (each worker takes distinct keys and keeps the locks), then of releases only (of those locks),
 * then S2's acquire + release cycles. Per phase: the masters' CPU (INFO cpu: used_cpu_user +
 * used_cpu_sys, each master read before and after), their command time (INFO commandstats), their
 * script calls (so the operations per call, the batch size) and the client process' CPU
 * (process.cpuUsage). A straight line through (operations per call, µs per call) gives a master's
 * fixed cost per script call and its cost per operation in a call.
 *
 * Part 2, the check: 5 fresh masters pinned to core 0 (`taskset -c 0`), the client (and this
 * process) to core 1, S2's cycles at 64 and 256 workers, and with batching off at 64. Predicted:
 * one core shared by the 5 masters sustains 1e6 / (the 5 masters' µs per lock at the batch size
 * the run measured) locks/s, and the client's core 1e6 / (its µs per lock from part 1); the lower
 * of the two against the measured locks/s.
 *
 * Output: markdown on stdout and in bench/results/scaling.md, the records beside it (scaling.json),
 * which `npm run bench:readme` renders into docs/scaling.md; a --quick run writes
 * bench/results/scaling-<timestamp>.{md,json} instead. Every process started is stopped by pid.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { ContenderChild, killAllChildren } from './children.js';
import { runToEnd } from './lifetime.js';
import { measureLimit } from './limit.js';
import { MasterStats, type MasterReading } from './master-stats.js';
import { commitOf, machineText } from './provenance.js';
import { fixed } from './report.js';
import { median } from './rounds.js';
import type { PhaseResult, PhaseWork, ScalingWork } from './scaling-process.js';
import {
  atBatch, callCost, clientProcessesFor, locksPerSecond, perMasterDelta, phaseCost, predicted, usPerOperation,
  type CallCost, type PhaseCost, type PhaseKind, type PhaseRecord,
} from './scaling-model.js';

const quick = process.argv.slice(2).includes('--quick');
const MASTERS = 5;
const DEADLINE_MS = 5_000;
/** Concurrent workers of part 1; the batched ones (more than one worker) make the fit. */
const WORKERS = [1, 16, 64, 256] as const;
/** Shard counts the deployment table shows. */
const SHARDS = [1, 3, 9] as const;
/** Sized so a full run takes about 3 minutes on 2 cores and --quick well under one. */
const plan = {
  rounds: quick ? 1 : 3,
  sequentialLocks: quick ? 400 : 3_000,
  concurrentLocks: quick ? 3_000 : 24_000,
  cyclesMs: quick ? 500 : 2_500,
  idleMs: quick ? 500 : 2_000,
  warmMs: quick ? 500 : 2_000,
  checkMs: quick ? 1_000 : 4_000,
};
/** The check's runs: the client's label (bench/libraries.ts) and its workers. */
const CHECKS = [
  { label: 'ours', workers: 64 },
  { label: 'ours', workers: 256 },
  { label: 'ours (no batching)', workers: 64 },
] as const;
type Label = (typeof CHECKS)[number]['label'];
/** The masters-bound check: acquires per script call redis-benchmark sends, and how it drives each master. */
const LIMIT_BATCHES = [1, 8, 32, 128] as const;
const LIMIT_DRIVER = { clients: 16, pipeline: 1, cpus: '1' } as const;

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
let masters: RedisMaster[] = [];
let stats: MasterStats | undefined;
const clients: ContenderChild<ScalingWork, PhaseResult>[] = [];

/** One part-2 run: a check's cycles phase, with the cores' load over it. */
interface CheckRecord extends PhaseRecord {
  readonly label: Label;
}

/** One redis-benchmark run against the pinned masters: its acquires per call, and the masters' counters over it. */
interface LimitRecord {
  readonly operationsPerCall: number;
  readonly round: number;
  /** Script calls per second redis-benchmark reported, the masters summed. */
  readonly callsPerSecond: number;
  readonly elapsedMs: number;
  readonly masters: readonly MasterReading[];
}

async function main(): Promise<void> {
  const loadAverage = os.loadavg()[0] ?? Number.NaN;
  const costs = await measureCosts();
  const checks = await measureCheck();
  report(costs, checks, loadAverage);
}

/** Part 1: every phase at every worker count, unpinned. */
async function measureCosts(): Promise<{ records: CheckRecord[]; idleUsPerSecond: number[] }> {
  const { ours, noBatching } = await setUp({});
  const idle = await idleCost();
  const records: CheckRecord[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    for (const workers of WORKERS) {
      const keyPrefix = `bench:scaling:${round}:${workers}`;
      const locks = workers === 1 ? plan.sequentialLocks : plan.concurrentLocks;
      records.push(await measure(ours, 'ours', round, { kind: 'acquire', workers, locks, keyPrefix, deadlineMs: DEADLINE_MS }));
      records.push(await measure(ours, 'ours', round, { kind: 'release', workers, deadlineMs: DEADLINE_MS }));
      records.push(await measure(ours, 'ours', round, cycles(workers, plan.cyclesMs, `${keyPrefix}:cycles`)));
    }
    // The client the check runs with batching off: its own µs per lock, at the check's workers.
    const workers = CHECKS.find((check) => check.label === 'ours (no batching)')!.workers;
    records.push(await measure(noBatching, 'ours (no batching)', round, cycles(workers, plan.cyclesMs, `bench:scaling:${round}:nb`)));
  }
  await tearDown();
  return { records, idleUsPerSecond: idle };
}

/** Part 2: masters on core 0, the clients and this process on core 1. */
async function measureCheck(): Promise<{ records: CheckRecord[]; limits: LimitRecord[] }> {
  const { ours, noBatching } = await setUp({ cpus: '0' });
  execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  for (const client of [ours, noBatching]) {
    await client.ask({ kind: 'pin', cpus: '1' }, 10_000);
    await client.ask(cycles(64, plan.warmMs, `bench:scaling:check-warm:${client.label}`), plan.warmMs + 30_000);
  }
  const records: CheckRecord[] = [];
  const limits: LimitRecord[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    for (const check of CHECKS) {
      const client = check.label === 'ours' ? ours : noBatching;
      records.push(await measure(client, check.label, round, cycles(check.workers, plan.checkMs, `bench:scaling:check:${round}:${check.label}`)));
    }
    for (const operationsPerCall of LIMIT_BATCHES) limits.push(await measureMastersLimit(operationsPerCall, round));
  }
  await tearDown();
  return { records, limits };
}

/** redis-benchmark (on core 1, as the client was) sending our acquire script to every pinned master at once. */
async function measureMastersLimit(operationsPerCall: number, round: number): Promise<LimitRecord> {
  progress(`redis-benchmark · round ${round + 1}/${plan.rounds} · ${operationsPerCall} acquires per call`);
  const before = await stats!.read();
  const start = performance.now();
  const urls = masters.map((master) => master.url);
  // Once in a while redis-benchmark prints no figure on a loaded machine: one more try before giving up.
  const limit = await measureLimit(urls, plan.checkMs, operationsPerCall, LIMIT_DRIVER)
    .catch(() => measureLimit(urls, plan.checkMs, operationsPerCall, LIMIT_DRIVER));
  const elapsedMs = performance.now() - start;
  if (typeof limit === 'string') throw new Error(`the masters' limit: ${limit}`);
  return { operationsPerCall, round, callsPerSecond: limit.total, elapsedMs, masters: perMasterDelta(before, await stats!.read()) };
}

function cycles(workers: number, durationMs: number, keyPrefix: string): PhaseWork {
  return { kind: 'cycles', workers, durationMs, keyPrefix, deadlineMs: DEADLINE_MS };
}

/** 5 masters (pinned to `cpus` if given) and the two clients, warmed up; every process tracked for clean-up. */
async function setUp(options: { cpus?: string }): Promise<{ ours: ContenderChild<ScalingWork, PhaseResult>; noBatching: ContenderChild<ScalingWork, PhaseResult> }> {
  masters = await startMasters(MASTERS, options);
  const urls = masters.map((master) => master.url);
  stats = await MasterStats.connect(urls);
  const ours = await ContenderChild.start<ScalingWork, PhaseResult>('./scaling-process.ts', 'ours', urls, 'distinct');
  clients.push(ours);
  const noBatching = await ContenderChild.start<ScalingWork, PhaseResult>('./scaling-process.ts', 'ours (no batching)', urls, 'distinct');
  clients.push(noBatching);
  if (options.cpus === undefined) {
    for (const client of clients) await client.ask(cycles(64, plan.warmMs, `bench:scaling:warm:${client.label}`), plan.warmMs + 30_000);
    // The acquire-only and release-only paths, sequential and batched, compiled before anything is measured.
    for (const workers of [1, 64]) {
      await ours.ask({ kind: 'acquire', workers, locks: workers * 50, keyPrefix: `bench:scaling:warm:${workers}`, deadlineMs: DEADLINE_MS }, 300_000);
      await ours.ask({ kind: 'release', workers, deadlineMs: DEADLINE_MS }, 300_000);
    }
  }
  return { ours, noBatching };
}

async function tearDown(): Promise<void> {
  await stats?.close().catch(() => undefined);
  stats = undefined;
  await Promise.all(clients.splice(0).map((client) => client.stop()));
  for (const master of masters.splice(0)) master.stop();
}

/** The masters' CPU while nothing runs (their housekeeping), µs per second each: not subtracted, shown. */
async function idleCost(): Promise<number[]> {
  const before = await stats!.read();
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, plan.idleMs));
  const delta = perMasterDelta(before, await stats!.read());
  const seconds = (performance.now() - start) / 1000;
  return delta.map((master) => master.cpuUs / seconds);
}

async function measure(client: ContenderChild<ScalingWork, PhaseResult>, label: Label, round: number, work: PhaseWork): Promise<CheckRecord> {
  progress(`${label} · round ${round + 1}/${plan.rounds} · ${work.kind} · ${work.workers} workers`);
  const timeoutMs = work.kind === 'cycles' ? work.durationMs + 2 * DEADLINE_MS + 30_000 : 300_000;
  const before = await stats!.read();
  const result = await client.ask(work, timeoutMs);
  const after = await stats!.read();
  if (result.hung > 0) throw new Error(`${label}: a call missed the ${DEADLINE_MS} ms deadline in the ${work.kind} phase at ${work.workers} workers`);
  return {
    label, kind: work.kind, workers: work.workers, round,
    operations: result.operations, failures: result.failures, elapsedMs: result.elapsedMs, clientCpuUs: result.cpuUs,
    masters: perMasterDelta(before, after),
  };
}

function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
}

/** The median over rounds of every figure of a phase's cost. */
function medianCost(records: readonly PhaseRecord[]): PhaseCost {
  const costs = records.map(phaseCost);
  const of = (pick: (cost: PhaseCost) => number): number => median(costs.map(pick));
  return {
    operationsPerSecond: of((cost) => cost.operationsPerSecond),
    operationsPerCall: of((cost) => cost.operationsPerCall),
    serverUs: of((cost) => cost.serverUs),
    perMasterUs: { min: of((cost) => cost.perMasterUs.min), max: of((cost) => cost.perMasterUs.max) },
    commandUs: of((cost) => cost.commandUs),
    serverUsPerCall: of((cost) => cost.serverUsPerCall),
    clientUs: of((cost) => cost.clientUs),
  };
}

function report(
  part1: { records: CheckRecord[]; idleUsPerSecond: number[] },
  part2: { records: CheckRecord[]; limits: LimitRecord[] },
  loadAverage: number,
): void {
  const pick = (records: readonly CheckRecord[], label: Label, kind: PhaseKind, workers: number): PhaseCost =>
    medianCost(records.filter((record) => record.label === label && record.kind === kind && record.workers === workers));
  const ours = (kind: PhaseKind, workers: number): PhaseCost => pick(part1.records, 'ours', kind, workers);
  const batched = WORKERS.filter((workers) => workers > 1);
  const fit = {
    acquire: callCost(batched.map((workers) => ours('acquire', workers))),
    release: callCost(batched.map((workers) => ours('release', workers))),
    cycles: callCost(batched.map((workers) => ours('cycles', workers))),
  };
  const costRows = WORKERS.flatMap((workers) => {
    const [acquire, release, cycle] = (['acquire', 'release', 'cycles'] as const).map((kind) => ours(kind, workers)) as [PhaseCost, PhaseCost, PhaseCost];
    const row = (what: string, cost: PhaseCost, scale: number, rate: number): string =>
      `| ${workers} | ${what} | ${fixed(rate, 0)} | ${fixed(cost.operationsPerCall, 1)} | ${fixed(cost.serverUs * scale, 1)} | ` +
      `${fixed(cost.perMasterUs.min * scale, 1)}–${fixed(cost.perMasterUs.max * scale, 1)} | ${fixed(cost.commandUs * scale, 1)} | ${fixed(cost.clientUs * scale, 1)} |`;
    const sumRow = `| ${workers} | lock: acquire + release, the two rows summed | — | — | ${fixed(acquire.serverUs + release.serverUs, 1)} | ` +
      `${fixed(acquire.perMasterUs.min + release.perMasterUs.min, 1)}–${fixed(acquire.perMasterUs.max + release.perMasterUs.max, 1)} | ` +
      `${fixed(acquire.commandUs + release.commandUs, 1)} | ${fixed(acquire.clientUs + release.clientUs, 1)} |`;
    return [
      row('acquire', acquire, 1, acquire.operationsPerSecond),
      row('release', release, 1, release.operationsPerSecond),
      sumRow,
      row('lock: acquire + release cycles, measured', cycle, 2, cycle.operationsPerSecond / 2),
    ];
  });
  const costTable = [
    `### Per-lock cost — ${MASTERS} masters and the client sharing the machine, unpinned`,
    '',
    'A row per phase: acquires only (each worker takes distinct keys and keeps the locks), releases only (of those locks), and ' +
      'S2\'s acquire + release cycles. Operations per call: lock operations in one script call to one master. ' +
      `Masters' CPU: INFO cpu (used_cpu_user + used_cpu_sys), summed over the ${MASTERS} masters, and the cheapest to dearest master; ` +
      'command time: INFO commandstats; client CPU: process.cpuUsage of the client process. Medians over the rounds.',
    '',
    `| workers | per | per second | operations per call | masters' CPU µs (Σ ${MASTERS}) | one master's CPU µs, min–max | masters' command µs (Σ ${MASTERS}) | client CPU µs |`,
    '|---:|---|---:|---:|---:|---:|---:|---:|',
    ...costRows,
    ...CHECKS.filter((check) => check.label !== 'ours').map((check) => {
      const cost = pick(part1.records, check.label, 'cycles', check.workers);
      return `| ${check.workers} | lock: acquire + release cycles, ${check.label} | ${fixed(cost.operationsPerSecond / 2, 0)} | ${fixed(cost.operationsPerCall, 1)} | ` +
        `${fixed(cost.serverUs * 2, 1)} | ${fixed(cost.perMasterUs.min * 2, 1)}–${fixed(cost.perMasterUs.max * 2, 1)} | ${fixed(cost.commandUs * 2, 1)} | ${fixed(cost.clientUs * 2, 1)} |`;
    }),
    '',
    `Idle masters (housekeeping, not subtracted above): ${part1.idleUsPerSecond.map((us) => fixed(us, 0)).join(', ')} µs of CPU per second.`,
  ].join('\n');

  const fitTable = [
    '### One master\'s CPU per script call: a fixed part and a part per operation',
    '',
    `The least-squares line through (operations per call, one master's CPU µs per call) of the batched phases (${batched.join(', ')} workers); ` +
      'then one master\'s µs per operation at a few batch sizes. The cycles\' calls carry acquires and releases together.',
    '',
    '| operations | fixed µs per call | µs per operation in a call | per operation at 1 per call | at 8 | at 32 | at 128 |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...(['acquire', 'release', 'cycles'] as const).map((kind) => {
      const cost: CallCost = fit[kind];
      const at = (batch: number): string => fixed(usPerOperation(cost, batch), 1);
      const name = kind === 'cycles' ? 'acquire + release cycles' : `${kind}s only`;
      return `| ${name} | ${fixed(cost.perCallUs, 1)} | ${fixed(cost.perOperationUs, 2)} | ${at(1)} | ${at(8)} | ${at(32)} | ${at(128)} |`;
    }),
  ].join('\n');

  const deployment = WORKERS.map((workers) => {
    const cycle = ours('cycles', workers);
    const masterUsPerLock = (cycle.serverUs * 2) / MASTERS;
    const clientUsPerLock = cycle.clientUs * 2;
    const perShards = SHARDS.map((shards) => locksPerSecond(masterUsPerLock, shards));
    return `| ${workers} | ${fixed(cycle.operationsPerCall, 1)} | ${fixed(masterUsPerLock, 1)} | ` +
      `${perShards.map((rate) => fixed(rate, 0)).join(' | ')} | ${fixed(clientUsPerLock, 1)} | ${fixed(locksPerSecond(clientUsPerLock), 0)} | ` +
      `${perShards.map((rate) => String(clientProcessesFor(rate, clientUsPerLock))).join(' | ')} |`;
  });
  const deploymentTable = [
    '### The model: N voters × S shards, each master on a core of its own',
    '',
    'Every voter sees every lock and a voter\'s S shards split them, so the masters sustain S × 1e6 / (one master\'s µs per lock) ' +
      'locks/s whatever N is; one client process (a core) drives 1e6 / (its µs per lock). Both from the first table\'s cycles rows: ' +
      `one master's µs per lock is the ${MASTERS} masters' figure ÷ ${MASTERS}; the client's was measured with ${MASTERS} masters per lock. ` +
      'A shard sees the row\'s batch size only if the clients keep that many operations in flight for each shard.',
    '',
    `| workers of one client | operations per call | one master's µs per lock | ${SHARDS.map((shards) => `locks/s, S = ${shards}`).join(' | ')} | ` +
      `client µs per lock | locks/s per client process | ${SHARDS.map((shards) => `client processes for S = ${shards}`).join(' | ')} |`,
    `|---:|---:|---:|${SHARDS.map(() => '---:').join('|')}|---:|---:|${SHARDS.map(() => '---:').join('|')}|`,
    ...deployment,
  ].join('\n');

  const checkRows = CHECKS.map((check) => {
    const records = part2.records.filter((record) => record.label === check.label && record.workers === check.workers);
    const measured = medianCost(records);
    const unpinned = pick(part1.records, check.label, 'cycles', check.workers);
    const batch = measured.operationsPerCall;
    // Part 1's cycles of the same client and workers, moved to the batch size this run measured.
    const serverUsPerLock = atBatch(unpinned.serverUs * 2, unpinned.operationsPerCall, batch, fit.cycles, MASTERS);
    const clientUsPerLock = unpinned.clientUs * 2;
    const serverBound = locksPerSecond(serverUsPerLock);
    const clientBound = locksPerSecond(clientUsPerLock);
    const expected = predicted(serverBound, clientBound);
    const locks = measured.operationsPerSecond / 2;
    const busy = (pickUs: (record: PhaseRecord) => number): number =>
      median(records.map((record) => (pickUs(record) / (record.elapsedMs * 1000)) * 100));
    return {
      label: check.label, workers: check.workers, batch, serverUsPerLock, clientUsPerLock, serverBound, clientBound, expected, locks,
      ratio: locks / expected.locksPerSecond,
      measuredServerUsPerLock: measured.serverUs * 2,
      measuredClientUsPerLock: measured.clientUs * 2,
      mastersBusy: busy((record) => record.masters.reduce((total, master) => total + master.cpuUs, 0)),
      clientBusy: busy((record) => record.clientCpuUs),
    };
  });
  const checkTable = [
    `### The check, the client the limit — the ${MASTERS} masters pinned to core 0, our client to core 1`,
    '',
    `\`taskset -c 0\` for every redis-server, \`taskset -a -p -c 1\` for the client process (and the bench's own), S2's cycles for ${plan.checkMs} ms, ` +
      `medians over ${plan.rounds} round${plan.rounds > 1 ? 's' : ''}. Model: the masters' µs per lock (Σ ${MASTERS}) of the same client and workers ` +
      'in the first table (unpinned), moved to the operations per call this run measured by the cycles\' fixed µs per call; the client\'s µs per lock ' +
      'from the same row. Predicted: the lower of 1e6 / each. Then what the pinned run itself measured: µs per lock and how busy each core was ' +
      '(CPU over the run\'s wall time, the masters summed).',
    '',
    `| client | workers | operations per call | masters' µs per lock (Σ ${MASTERS}, model) | predicted, masters' core the limit | client µs per lock (model) | ` +
      'predicted, client\'s core the limit | predicted locks/s | measured locks/s | measured ÷ predicted | masters\' µs per lock, measured | ' +
      'client µs per lock, measured | core 0 busy (masters) | core 1 busy (client) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...checkRows.map((row) =>
      `| ${row.label} | ${row.workers} | ${fixed(row.batch, 1)} | ${fixed(row.serverUsPerLock, 1)} | ${fixed(row.serverBound, 0)} | ` +
        `${fixed(row.clientUsPerLock, 1)} | ${fixed(row.clientBound, 0)} | ${fixed(row.expected.locksPerSecond, 0)} (${row.expected.limit}) | ` +
        `${fixed(row.locks, 0)} | ${fixed(row.ratio, 2)} | ${fixed(row.measuredServerUsPerLock, 1)} | ${fixed(row.measuredClientUsPerLock, 1)} | ` +
        `${fixed(row.mastersBusy, 0)} % | ${fixed(row.clientBusy, 0)} % |`),
  ].join('\n');

  const limitRows = LIMIT_BATCHES.map((operationsPerCall) => {
    const records = part2.limits.filter((record) => record.operationsPerCall === operationsPerCall);
    const expected = locksPerSecond(usPerOperation(fit.acquire, operationsPerCall));
    const acquires = median(records.map((record) => record.callsPerSecond * operationsPerCall));
    const cpuUs = (record: LimitRecord): number => record.masters.reduce((total, master) => total + master.cpuUs, 0);
    const calls = (record: LimitRecord): number => record.masters.reduce((total, master) => total + master.scriptCalls, 0);
    return {
      operationsPerCall, expected, acquires, ratio: acquires / expected,
      measuredUsPerAcquire: median(records.map((record) => cpuUs(record) / (calls(record) * operationsPerCall))),
      mastersBusy: median(records.map((record) => (cpuUs(record) / (record.elapsedMs * 1000)) * 100)),
    };
  });
  const limitTable = [
    `### The check, the masters the limit — the ${MASTERS} masters pinned to core 0, redis-benchmark on core 1`,
    '',
    `Under load our client costs more per lock than the ${MASTERS} masters together (the first table's cycles rows), so with it on a core of its own the masters' core is not the limit. ` +
      `To load the masters' core, ${MASTERS} redis-benchmark processes (C; \`taskset -c ${LIMIT_DRIVER.cpus}\`, ${LIMIT_DRIVER.clients} connections each, ` +
      `${LIMIT_DRIVER.pipeline} call in flight on each) send our acquire script, n acquires of random keys per call, to every master at once, ` +
      `about ${plan.checkMs} ms each after a calibration run. Predicted: one core running the ${MASTERS} masters sustains 1e6 / (one master's µs per acquire ` +
      'at n per call, from the "acquires only" line above) acquires per second, the masters together.',
    '',
    '| acquires per call | predicted acquires/s (core 0) | measured acquires/s | measured ÷ predicted | masters\' µs per acquire, measured | core 0 busy (masters) |',
    '|---:|---:|---:|---:|---:|---:|',
    ...limitRows.map((row) =>
      `| ${row.operationsPerCall} | ${fixed(row.expected, 0)} | ${fixed(row.acquires, 0)} | ${fixed(row.ratio, 2)} | ${fixed(row.measuredUsPerAcquire, 1)} | ${fixed(row.mastersBusy, 0)} % |`),
  ].join('\n');

  const command = `npm run bench:scaling${quick ? ' -- --quick' : ''}`;
  const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1] ?? 'unknown';
  const commit = commitOf();
  const quiet = loadAverage < 1.5 ? '' : ' (not quiet: others were measuring on the machine)';
  const header = `## Scaling — \`${command}\`\n\n${new Date().toISOString().slice(0, 10)}${commit ? ` · commit ${commit}` : ''} · ${machineText()} · ` +
    `redis-server ${redisVersion} · ${MASTERS} local masters, no persistence · ours on URLs (node-redis), built · ttl 10 s · ` +
    `1-minute load average at the start ${fixed(loadAverage, 2)}${quiet} · ${plan.rounds} round${plan.rounds > 1 ? 's' : ''} · ` +
    `${plan.sequentialLocks} locks for 1 worker, ${plan.concurrentLocks} for more; cycles for ${plan.cyclesMs} ms\n`;
  const markdown = [header, costTable, '', fitTable, '', deploymentTable, '', limitTable, '', checkTable].join('\n');
  console.log(`\n${markdown}`);
  mkdirSync(resultsDir, { recursive: true });
  const name = quick ? `scaling-${new Date().toISOString().replace(/[:.]/g, '-')}` : 'scaling';
  const json = {
    date: new Date().toISOString(), commit, command, quick, machine: machineText(), redisVersion, loadAverage, plan,
    idleUsPerSecond: part1.idleUsPerSecond, fit, records: part1.records, checks: checkRows, checkRecords: part2.records, limits: limitRows, limitRecords: part2.limits,
  };
  writeFileSync(`${resultsDir}${name}.md`, `${markdown}\n`);
  writeFileSync(`${resultsDir}${name}.json`, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`results: bench/results/${name}.md, bench/results/${name}.json`);
}

async function cleanUp(): Promise<void> {
  await tearDown().catch(() => undefined);
  killAllChildren();
  for (const master of masters) master.stop();
}

await runToEnd(main, cleanUp);
