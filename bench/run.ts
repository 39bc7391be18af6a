/**
 * `npm run bench [-- --quick]`: this library side by side with node-redlock, redis-semaphore and a
 * raw node-redis floor, in one run, slices interleaved so machine noise hits all of them alike.
 *
 * S1 sequential acquire+release, 1 worker · S2 64 and 256 workers on distinct keys · S3 hot key:
 * 16 workers, one resource, 1 ms section · S4 one master blackholed (S1, S2@64) · S5 one master
 * +20 ms round trip (S1) · S6 hot key across processes: 4 processes × 4 workers, one resource, 1 ms
 * section, every library at its defaults · S7 S2 at 64 workers on 3 standalone voters vs 3 Redis
 * Cluster voters of 3 masters each (local only) · S8 a semaphore of 4 permits, 16 workers, 1 ms
 * section · S9 a read-write lock, 16 workers, 90 % reads, 1 ms section (S8 and S9 at defaults,
 * against redis-semaphore; the bench counts holders itself).
 * Masters: 5 throwaway local redis-server processes, or REDLOCK_NODES.
 * Then the own-process mode (bench/own-run.ts: S1, S2, S3 and S6 with each library in processes of
 * its own, on 5 local masters of its own), with the same --quick and --only; the README's rows come
 * from it. Both modes' Targets blocks close the output, the own-process one first.
 * Output: a progress bar, markdown tables on stdout, bench/results/<timestamp>.{json,svg} (the
 * own-process mode's record inside the JSON, as `own`).
 */
import { mkdirSync, writeFileSync, copyFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SingleBar, Presets } from 'cli-progress';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { RedisCluster } from '../lab/redis-cluster.js';
import { ProxyProcess } from './faults.js';
import type { HeldLocks } from './held-locks.js';
import { measureHeldLocks, stopHeldLocks } from './held-process.js';
import { measureLimit, type MastersLimit } from './limit.js';
import { MasterStats, masterDelta } from './master-stats.js';
import type { Contender } from './contender.js';
import { contenders, oursOn, readWriteContenders, semaphoreContenders, type ContenderSpec, type Profile } from './libraries.js';
import { ContenderProcesses, addRound } from './processes.js';
import { killAllChildren } from './children.js';
import { svgChart } from './chart.js';
import { commitOf, machineText } from './provenance.js';
import { markdownTable, processesTable, rowOf, sharedTable, type Row } from './report.js';
import { updateReadme } from './readme.js';
import { HOT_KEY_DEADLINE_MS, HOT_KEY_SECTION_MS, S2_WORKERS, S3_WORKERS, S6_LABELS, S6_PROCESSES, S6_WORKERS, S7_WORKERS, S8_WORKERS, SEMAPHORE_LIMIT, S9_READ_SHARE, S9_WORKERS, IN_PROCESS_TARGETS_TITLE, measures, targetsMarkdown } from './targets.js';
import { concurrentSlice, hotKeySlice, newTally, sequentialSlice, sharedSlice, type Tally } from './scenarios.js';
import { runToEnd } from './lifetime.js';
import { measureRtt } from './round-trip.js';
import { OWN_GROUPS, OWN_TARGETS_TITLE, ownPlan, runOwnProcess, stopOwnProcess, writeOwnRun, type OwnRun } from './own-run.js';

const quick = process.argv.includes('--quick');
const onlyArg = process.argv.indexOf('--only');
/**
 * `--only S1,S4`: run just these scenario groups (S2 covers both worker counts, S4 both parts, S5
 * its base too); `held` and `limit` are the held-locks measurement and the masters' limit.
 */
const only = onlyArg > 0 ? new Set(process.argv[onlyArg + 1]?.split(',')) : undefined;
const wanted = (group: string): boolean => !only || only.has(group);
const plan = quick
  ? { s1: [2, 150], s2: [1, 800], s3: [1, 1500], s4s1: [1, 100], s4s2: [1, 800], s5: [1, 25], s6: [1, 1500], s8: [1, 1000], s9: [1, 1000] }
  : { s1: [5, 1000], s2: [3, 3000], s3: [3, 3000], s4s1: [3, 1000], s4s2: [2, 2000], s5: [3, 100], s6: [3, 3000], s8: [3, 3000], s9: [3, 3000] };
const DEADLINE_MS = 2_000;
const S5_ADDED_RTT_MS = 20;
const SHARED_SECTION_MS = 1;
const SHARED_FOOTNOTE =
  'Every library at its defaults, ttl 10 s: ours tries 11 times (10 retries, 200 ± 100 ms apart or sooner when a release wakes it), ' +
  'redis-semaphore every 10 ms for up to 10 s (its acquireTimeout). The bench counts a hold from its acquire resolving to its release being called.';

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));

interface Scenario {
  readonly id: string;
  readonly title: string;
  readonly rounds: number;
  readonly deadlineMs: number;
  readonly hotKey: boolean;
  /** Read the masters' script call counts around each slice (the row's scriptCallsPerSecond). */
  readonly countsScriptCalls?: boolean;
  /** Before each of its slices: the fault this scenario runs under (its group's proxy setting). */
  readonly setUp?: () => Promise<void>;
  /** Its markdown table, where it is not the plain one (S8, S9). */
  readonly table?: (rows: readonly Row[]) => string;
  run(contender: Contender, tally: Tally, keyPrefix: string, deadlineMs: number): Promise<void>;
}

const rows: Row[] = [];
/** One round trip to a master (median PING), the unit for hand-off latency. */
let rttMs = Number.NaN;
/** The masters' own limit (bench/limit.ts), when measured: one acquire per call, then our S2 @ 64's batch size. */
const limits: MastersLimit[] = [];
/** bench:held's figures (10,000 held auto-extended locks; fewer and shorter with --quick). */
let held: HeldLocks | undefined;
const tables: string[] = [];
let masters: RedisMaster[] = [];
let proxies: ProxyProcess | undefined;
let clusters: RedisCluster[] = [];
const open: Contender[] = [];
const bar = new SingleBar(
  { format: '{bar} {percentage}% | {value}/{total} slices | {scenario} · {contender}', hideCursor: true, clearOnComplete: true },
  Presets.shades_classic,
);

/** The commit measured: read now, beside the build `npm run bench` just made, not when the run ends. */
const measuredCommit = commitOf();

async function main(): Promise<void> {
  const external = process.env['REDLOCK_NODES']?.split(',').filter(Boolean);
  if (!external) masters = await startMasters(5);
  const urls = external ?? masters.map((master) => master.url);
  const firstPort = Number(new URL(urls[0]!).port || 6379);
  rttMs = await measureRtt(urls[0]!);
  const loopback = ['127.0.0.1', 'localhost'].includes(new URL(urls[0]!).hostname);

  const sequential = (id: string, title: string, [rounds, cycles]: number[]): Scenario => ({
    id, title, rounds: rounds!, deadlineMs: DEADLINE_MS, hotKey: false,
    run: (contender, tally, keyPrefix, deadlineMs) => sequentialSlice({ contender, tally, keyPrefix, deadlineMs }, cycles!),
  });
  const concurrent = (id: string, title: string, workers: number, [rounds, ms]: number[], countsScriptCalls = false): Scenario => ({
    id, title, rounds: rounds!, deadlineMs: DEADLINE_MS, hotKey: false, countsScriptCalls,
    run: (contender, tally, keyPrefix, deadlineMs) => concurrentSlice({ contender, tally, keyPrefix, deadlineMs }, workers, ms!),
  });
  const healthy: Scenario[] = [
    ...(wanted('S1') ? [sequential('S1', 'S1 — sequential acquire + release, 1 worker', plan.s1)] : []),
    ...(wanted('S2') ? S2_WORKERS : []).map((workers) =>
      concurrent(`S2 ${workers} workers`, `S2 — ${workers} concurrent workers, distinct keys`, workers, plan.s2, true),
    ),
  ];
  const hot: Scenario = {
    id: 'S3', title: `S3 — hot key: ${S3_WORKERS} workers, one resource, ${HOT_KEY_SECTION_MS} ms critical section`,
    rounds: plan.s3[0]!, deadlineMs: HOT_KEY_DEADLINE_MS, hotKey: true,
    run: (contender, tally, keyPrefix, deadlineMs) =>
      hotKeySlice({ contender, tally, keyPrefix, deadlineMs }, S3_WORKERS, plan.s3[1]!, HOT_KEY_SECTION_MS),
  };
  const blackholed = wanted('S4')
    ? [
        sequential('S4 S1', 'S4 — one master blackholed: S1', plan.s4s1),
        concurrent('S4 S2 64 workers', 'S4 — one master blackholed: S2, 64 workers', 64, plan.s4s2),
      ]
    : [];
  // S5 beside its baseline, slice by slice: S1 through the same proxy process with nothing added
  // (the proxy's own hop and CPU), then with master 0's round trip +S5_ADDED_RTT_MS.
  const slow = wanted('S5')
    ? [
        { ...sequential('S5 base', 'S5 base — S1 with master 0 behind the same proxy process, nothing added', plan.s5), setUp: () => proxies!.set(0, 'pass') },
        { ...sequential('S5', `S5 — one master +${S5_ADDED_RTT_MS} ms round trip: S1`, plan.s5), setUp: () => proxies!.set(0, 'pass', S5_ADDED_RTT_MS / 2) },
      ]
    : [];
  const hotKeyScenarios = wanted('S3') ? [hot] : [];
  const faulty = loopback;
  // --quick: ours and node-redlock only (each contender is S6_PROCESSES processes to start).
  const s6Labels = quick ? S6_LABELS.slice(0, 2) : S6_LABELS;
  const s6Specs = wanted('S6') ? s6Labels.map((label) => contenders.find((spec) => spec.label === label)!) : [];
  const s7 = wanted('S7') && loopback && !external;
  const s7Scenario = concurrent(
    'S7', `S7 — ${S7_WORKERS} concurrent workers, distinct keys: 3 standalone voters vs 3 Redis Cluster voters of 3 masters`, S7_WORKERS, plan.s2,
  );

  // S8 and S9: one name, many holders at once; each library at its defaults (bench/libraries.ts).
  const shared = (id: string, title: string, [rounds, ms]: number[], readShare: number, workers: number, limit: number): Scenario => ({
    id, title, rounds: rounds!, deadlineMs: HOT_KEY_DEADLINE_MS, hotKey: false,
    table: (scenarioRows) => sharedTable(title, scenarioRows, HOT_KEY_DEADLINE_MS, limit, SHARED_FOOTNOTE),
    run: (contender, tally, keyPrefix, deadlineMs) =>
      sharedSlice({ contender, tally, keyPrefix, deadlineMs }, { workers, durationMs: ms!, sectionMs: SHARED_SECTION_MS, readShare, limit }),
  });
  const semaphore = wanted('S8')
    ? [shared('S8', `S8 — semaphore: limit ${SEMAPHORE_LIMIT}, ${S8_WORKERS} workers in one process, ${SHARED_SECTION_MS} ms section, defaults`, plan.s8, 0, S8_WORKERS, SEMAPHORE_LIMIT)]
    : [];
  const readWrite = wanted('S9')
    ? [
        shared(
          'S9',
          `S9 — read-write: ${S9_WORKERS} workers, ${Math.round(S9_READ_SHARE * 100)} % reads, ${SHARED_SECTION_MS} ms section, defaults; ` +
            "redis-semaphore has no read-write lock: its RedlockMutex for every access (reads exclusive too), and ours the same way as 'ours (mutex)'",
          plan.s9, S9_READ_SHARE, S9_WORKERS, 1,
        ),
      ]
    : [];

  const hotSpecs = contenders.filter((spec) => spec.hotKey);
  const slices = (list: Scenario[], specs: readonly ContenderSpec[]): number =>
    list.reduce((total, scenario) => total + scenario.rounds * specs.length, 0);
  bar.start(
    slices(healthy, contenders) + slices(hotKeyScenarios, hotSpecs) + (faulty ? slices([...blackholed, ...slow], contenders) : 0) +
      plan.s6[0]! * s6Specs.length + (s7 ? slices([s7Scenario], [contenders[0]!, contenders[0]!]) : 0) +
      slices(semaphore, semaphoreContenders) + slices(readWrite, readWriteContenders),
    0,
    { scenario: 'starting', contender: '' },
  );

  if (healthy.length) await runGroup(healthy, contenders, urls, 'distinct');
  if (hotKeyScenarios.length) await runGroup(hotKeyScenarios, hotSpecs, urls, 'hotKey');
  if (faulty && (blackholed.length || slow.length)) {
    proxies = await ProxyProcess.start([firstPort]);
    const viaProxy = [`redis://127.0.0.1:${proxies.ports[0]}`, ...urls.slice(1)];
    if (blackholed.length) {
      // Healed with a reset: what the blackhole held back (a scenario's worth of requests) dies with
      // its connections instead of reaching master 0 as one stale burst.
      const heal = (): Promise<void> => proxies!.reset(0).then(() => proxies!.set(0, 'pass'));
      await runGroup(blackholed, contenders, viaProxy, 'distinct', () => proxies!.set(0, 'blackhole'), heal);
    }
    if (slow.length) {
      await runGroup(slow, contenders, viaProxy, 'distinct', undefined, () => proxies!.set(0, 'pass'), true);
    }
  }
  if (s6Specs.length) await runAcrossProcesses(s6Specs, urls);
  if (s7) {
    clusters = await Promise.all([0, 1, 2].map(() => RedisCluster.start(3)));
    const specs = [
      oursOn('redlock-quorum, 3 standalone voters', 'standalone ×3', urls.slice(0, 3)),
      oursOn('redlock-quorum, 3 cluster voters × 3 masters', 'cluster ×3×3', clusters.map((cluster) => ({ rootNodes: [{ url: cluster.urls[0]! }] }))),
    ];
    await runGroup([s7Scenario], specs, urls, 'distinct');
    for (const cluster of clusters.splice(0)) cluster.stop();
  }
  if (semaphore.length) await runGroup(semaphore, semaphoreContenders, urls, 'defaults');
  if (readWrite.length) await runGroup(readWrite, readWriteContenders, urls, 'defaults');
  if (wanted('held') && !external) {
    bar.update({ scenario: 'held locks', contender: quick ? '10,000 locks for 4 s, ttl 4 s' : '10,000 locks for 60 s' });
    // Its own masters, alone on the machine; the full run's default writes bench/results/held.md.
    // A failure (10,000 acquires at once on a loaded machine can run out of retries) is reported,
    // not fatal: the scenarios' results are kept.
    await measureHeldLocks(quick ? ['--seconds', '4', '--ttl', '4000'] : [], quick ? 60_000 : 240_000).then(
      (figures) => void (held = figures),
      (error: unknown) => void tables.push(`### Many held locks\n\nnot measured: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  }
  if (wanted('limit') && loopback && !external) {
    bar.update({ scenario: "the masters' limit", contender: 'redis-benchmark' });
    // Last: it leaves a few hundred thousand keys behind on each master (until their ttl).
    const durationMs = quick ? 500 : 2_000;
    const single = await measureLimit(urls, durationMs);
    if (typeof single === 'string') tables.push(`### The masters' limit\n\n${single}\n`);
    else {
      limits.push(single);
      // Our batcher puts several operations in one script call: the masters' limit with as many.
      const ours = rows.find((row) => row.scenario === 'S2 64 workers' && row.label === 'ours');
      const perCall = ours?.scriptCallsPerSecond ? Math.round((2 * ours.opsPerSecond) / ours.scriptCallsPerSecond) : 1;
      const batched = perCall > 1 ? await measureLimit(urls, durationMs, perCall) : undefined;
      if (batched && typeof batched !== 'string') limits.push(batched);
      tables.push(limitTable(limits));
    }
  }
  bar.stop();
  // Read again at the end, the lower median kept: one read beside a busy start (the build, the
  // servers' first moments) once came out 3× the other.
  rttMs = Math.min(rttMs, await measureRtt(urls[0]!));
  // The own-process mode next, on masters of its own: these have done their part.
  for (const master of masters.splice(0)) master.stop();
  const ownGroups = OWN_GROUPS.filter(wanted);
  const own = ownGroups.length ? await runOwn(ownGroups) : undefined;
  report(urls.length, external !== undefined, own);
}

/** The own-process mode (bench/own-run.ts) on `groups`, with the same --quick, its progress on the bar. */
async function runOwn(groups: readonly string[]): Promise<OwnRun> {
  bar.start(1, 0, { scenario: 'own process', contender: 'starting' });
  try {
    return await runOwnProcess({
      plan: ownPlan(quick),
      ...(only ? { only: groups } : {}),
      command: commandLine(),
      quick,
      progress: (text, done, total) => {
        bar.setTotal(total);
        bar.update(done, { scenario: 'own process', contender: text });
      },
    });
  } finally {
    bar.stop();
  }
}

const commandLine = (): string => `npm run bench${quick || only ? ' --' : ''}${quick ? ' --quick' : ''}${only ? ` --only ${[...only].join(',')}` : ''}`;

/**
 * Create every contender on `urls`, warm each up, apply the fault, then run the scenarios' rounds
 * with the contenders in rotating order; a contender that hung is not run again in that scenario.
 * `interleaved`: round by round across the scenarios (each slice after its scenario's setUp), so a
 * scenario and its baseline see the same machine; otherwise each scenario's rounds in turn.
 */
async function runGroup(
  scenarios: readonly Scenario[],
  specs: readonly ContenderSpec[],
  urls: readonly string[],
  profile: Profile,
  applyFault?: () => Promise<void>,
  clearFault?: () => Promise<void>,
  interleaved = false,
): Promise<void> {
  const created = await Promise.all(specs.map((spec) => spec.create(urls, profile)));
  open.push(...created);
  for (const [i, contender] of created.entries()) {
    bar.update({ scenario: 'warm-up', contender: specs[i]!.label });
    await sequentialSlice({ contender, tally: newTally(), keyPrefix: `bench:warm:${i}`, deadlineMs: DEADLINE_MS }, 200);
  }
  await applyFault?.();
  const counter = scenarios.some((scenario) => scenario.countsScriptCalls) ? await MasterStats.connect(urls) : undefined;
  const tallies = scenarios.map(() => specs.map(() => newTally()));
  const calls = scenarios.map(() => specs.map(() => 0));
  const rounds = Math.max(...scenarios.map((scenario) => scenario.rounds));
  const order = interleaved
    ? Array.from({ length: rounds }, (_, round) => scenarios.flatMap((_, s) => (round < scenarios[s]!.rounds ? [[s, round] as const] : [])))
    : scenarios.map((scenario, s) => Array.from({ length: scenario.rounds }, (_, round) => [s, round] as const));
  for (const [s, round] of order.flat()) {
    const scenario = scenarios[s]!;
    await scenario.setUp?.();
    for (let k = 0; k < specs.length; k++) {
      const i = (k + round) % specs.length;
      const tally = tallies[s]![i]!;
      bar.increment(1, { scenario: scenario.id, contender: specs[i]!.label });
      if (tally.hung > 0) continue;
      const before = scenario.countsScriptCalls ? await counter!.read() : undefined;
      await scenario.run(created[i]!, tally, `bench:${scenario.id.replace(/ /g, '-')}:${i}:${round}`, scenario.deadlineMs);
      if (before) calls[s]![i]! += masterDelta(before, await counter!.read()).scriptCalls;
    }
  }
  for (const [s, scenario] of scenarios.entries()) {
    const scenarioRows = specs.map((spec, i) => {
      const tally = tallies[s]![i]!;
      const row = rowOf(scenario.id, spec.name, spec.label, tally, scenario.hotKey);
      const seconds = tally.measuredMs / 1000;
      return scenario.countsScriptCalls && seconds > 0 ? { ...row, scriptCallsPerSecond: calls[s]![i]! / urls.length / seconds } : row;
    });
    rows.push(...scenarioRows);
    tables.push(scenario.table ? scenario.table(scenarioRows) : markdownTable(scenario.title, scenarioRows, scenario.deadlineMs, rttMs));
  }
  await clearFault?.();
  await counter?.close();
  for (const contender of created) await contender.close();
  open.splice(0, open.length);
}

/**
 * S6: each contender in S6_PROCESSES processes of S6_WORKERS workers on one resource, at its
 * defaults; every process of every contender is started first, then rounds rotate the contenders.
 */
async function runAcrossProcesses(specs: readonly ContenderSpec[], urls: readonly string[]): Promise<void> {
  const title = `S6 — hot key across processes: ${S6_PROCESSES} processes × ${S6_WORKERS} workers, one resource, ${HOT_KEY_SECTION_MS} ms critical section, every library at its defaults`;
  bar.update({ scenario: 'S6', contender: `starting ${specs.length * S6_PROCESSES} processes` });
  const groups: ContenderProcesses[] = [];
  try {
    const started = await Promise.allSettled(specs.map((spec) => ContenderProcesses.start(spec.label, urls, S6_PROCESSES)));
    for (const outcome of started) if (outcome.status === 'fulfilled') groups.push(outcome.value);
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    const tallies = specs.map(() => newTally());
    const [rounds, durationMs] = plan.s6;
    for (let round = 0; round < rounds!; round++) {
      for (let k = 0; k < specs.length; k++) {
        const i = (k + round) % specs.length;
        bar.increment(1, { scenario: 'S6', contender: specs[i]!.label });
        if (tallies[i]!.hung > 0) continue;
        const results = await groups[i]!.round({
          key: `bench:S6:${i}:${round}`, durationMs: durationMs!, workers: S6_WORKERS, sectionMs: HOT_KEY_SECTION_MS, deadlineMs: HOT_KEY_DEADLINE_MS,
        });
        addRound(tallies[i]!, results, S6_WORKERS);
      }
    }
    const scenarioRows = specs.map((spec, i) => rowOf('S6', spec.name, spec.label, tallies[i]!, true));
    rows.push(...scenarioRows);
    tables.push(processesTable(title, scenarioRows, HOT_KEY_DEADLINE_MS, rttMs));
  } finally {
    await Promise.all(groups.map((group) => group.stop()));
  }
}

/**
 * Prints the in-process tables, the own-process tables, then both Targets blocks; writes the run's
 * record (the own-process mode's inside it, as `own`), and after a full run latest.md (in process),
 * own-latest.{md,json} and the generated sections of README.md and docs/benchmarks.md.
 */
function report(nodeCount: number, external: boolean, own: OwnRun | undefined): void {
  const machine = machineText();
  const masterText = external ? `${nodeCount} masters from REDLOCK_NODES` : `${nodeCount} local redis-server masters`;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const command = commandLine();
  const header = `## Benchmark — \`${command}\`\n\n${new Date().toISOString().slice(0, 10)} · ${machine} · ${masterText} · ttl 10 s · per-call deadline ${DEADLINE_MS} ms (hot key ${HOT_KEY_DEADLINE_MS / 1000} s) · one round trip (PING p50) ${rttMs.toFixed(3)} ms\n`;
  const summary = targets();
  const markdown = [header, ...tables, summary].join('\n');
  console.log(`\n${[header, ...tables, ...(own ? [own.tables, targetsMarkdown(own.measures, OWN_TARGETS_TITLE)] : []), summary].join('\n')}`);
  mkdirSync(resultsDir, { recursive: true });
  const json = { date: new Date().toISOString(), commit: measuredCommit, command, quick, machine, masters: masterText, rttMs, plan, rows, limits, held, targets: summary, ...(own ? { own: own.record } : {}) };
  // A full run's record is kept in git (runs/: the spread in docs/benchmarks.md is made from them); the others are scratch.
  const full = !quick && !only;
  if (full) mkdirSync(`${resultsDir}runs`, { recursive: true });
  writeFileSync(`${resultsDir}${full ? 'runs/' : ''}${stamp}.json`, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(`${resultsDir}${stamp}.svg`, svgChart(rows, `${command} · ${machine}`));
  if (full) {
    copyFileSync(`${resultsDir}${stamp}.svg`, `${resultsDir}latest.svg`);
    writeFileSync(`${resultsDir}latest.md`, `${markdown}\n`);
    if (own) writeOwnRun(own, 'own-latest');
    updateReadme(resultsDir);
    console.log('README.md, docs/benchmarks.md: benchmark sections regenerated from this run and the full runs before it');
  }
  console.log(`results: bench/results/${full ? 'runs/' : ''}${stamp}.json, bench/results/${stamp}.svg`);
}

/** The issues' targets as ratios from this run (bench/targets.ts). */
function targets(): string {
  return targetsMarkdown(measures({ rows, rttMs, limits, ...(held ? { held } : {}) }), IN_PROCESS_TARGETS_TITLE);
}

function limitTable(measured: readonly MastersLimit[]): string {
  const [{ perMaster, clients, pipeline }] = measured as [MastersLimit];
  const header = measured.map((limit) => `${limit.operationsPerCall} acquire${limit.operationsPerCall > 1 ? 's' : ''} per call: calls/s | acquires/s`);
  return [
    "### The masters' limit — redis-benchmark, our lock script's acquires of random keys, every master at once",
    '',
    `${perMaster.length} redis-benchmark processes at once, one per master, -c ${clients} -P ${pipeline}: one script call with one acquire, ` +
      'then (where S2 @ 64 ran) with as many acquires per call as our batcher sent on average there.',
    '',
    `| master | ${header.join(' | ')} |`,
    `|---|${measured.map(() => '---:|---:').join('|')}|`,
    ...perMaster.map((_, i) => `| ${i} | ${measured.map((limit) => `${Math.round(limit.perMaster[i]!)} | ${Math.round(limit.perMaster[i]! * limit.operationsPerCall)}`).join(' | ')} |`),
    `| all | ${measured.map((limit) => `${Math.round(limit.total)} | ${Math.round(limit.total * limit.operationsPerCall)}`).join(' | ')} |`,
    '',
  ].join('\n');
}

async function cleanUp(): Promise<void> {
  bar.stop();
  for (const contender of open) await contender.close().catch(() => undefined);
  await proxies?.stop().catch(() => undefined);
  for (const master of masters) master.stop();
  for (const cluster of clusters) cluster.stop();
  await stopOwnProcess();
  killAllChildren();
  stopHeldLocks();
}

await runToEnd(main, cleanUp);
