/**
 * The own-process mode (`npm run bench:own`, and the second half of `npm run bench`): every
 * contender alone in a process of its own (bench/own-process.ts), as a user runs it, against 5
 * throwaway masters. The processes start once and stay; each round runs every contender once, one
 * at a time while the others idle, in an order rotated by one each round, and a ratio of ours to a
 * peer is taken within each round.
 *
 * S1: one worker, sequential acquire + release (warm-up cycles first, not measured); per slice its
 * p50 and p99, the process' CPU per cycle (process.cpuUsage, user + system), and the masters' cost
 * per cycle: INFO cpu (used_cpu_user + used_cpu_sys) and INFO commandstats usec, summed over the
 * five masters, read before and after the slice. S2: 64 and 256 workers on distinct keys, for a
 * duration. S3: the hot key, 16 workers of the contender's one process on one key, 1 ms held. S6:
 * the hot key across 4 processes × 4 workers (bench/hot-key-process.ts), each contender's 4
 * processes alone, the others idle. The hot key runs every library at its defaults (the one
 * difference: redis-semaphore's background refresh is off in S3's process, and a 1 ms section
 * never reaches it), its hand-off counted in round trips of a PING, as in bench/run.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { ContenderChild, killAllChildren } from './children.js';
import { OWN_MASTERS } from './constants.js';
import { contenders } from './libraries.js';
import { MasterStats, masterDelta } from './master-stats.js';
import { ownSlice, type OwnSlice, type OwnWork } from './own-slice.js';
import { ownMeasures, ownResults, ownTable, roundsTable, type OwnRecord, type OwnServer, type OwnStored } from './own-report.js';
import { ContenderProcesses, addRound } from './processes.js';
import { commitOf, machineText } from './provenance.js';
import { measureRtt } from './round-trip.js';
import { newTally } from './scenarios.js';
import { HOT_KEY_DEADLINE_MS, HOT_KEY_SECTION_MS, S2_WORKERS, S3_WORKERS, S6_PROCESSES, S6_WORKERS, targetsMarkdown, type Measure } from './targets.js';

/**
 * Sized so a full run takes under 8 minutes on 2 cores and --quick under 1.5: S1 slices of
 * `s1Cycles` after `warmCycles` unmeasured ones (and `firstWarmCycles` before the first round), S2
 * slices of `s2Ms`, hot-key slices of `hotKeyMs` (S6's after an unmeasured round of `hotKeyWarmMs`).
 */
export interface OwnPlan {
  readonly rounds: number;
  readonly firstWarmCycles: number;
  readonly warmCycles: number;
  readonly s1Cycles: number;
  readonly s2Ms: number;
  readonly hotKeyMs: number;
  readonly hotKeyWarmMs: number;
}

export function ownPlan(quick: boolean, rounds = quick ? 2 : 5): OwnPlan {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds takes a whole number ≥ 1, not ${rounds}`);
  return {
    rounds,
    firstWarmCycles: quick ? 500 : 2_000,
    warmCycles: quick ? 100 : 200,
    s1Cycles: quick ? 1_000 : 4_000,
    s2Ms: quick ? 500 : 2_500,
    hotKeyMs: quick ? 600 : 2_000,
    hotKeyWarmMs: quick ? 100 : 300,
  };
}

/** The scenario groups this mode runs (`--only` picks among them). */
export const OWN_GROUPS = ['S1', 'S2', 'S3', 'S6'];
const DEADLINE_MS = 2_000;
/** S1 and S2's own: ours on URLs (node-redis) and on ioredis clients, the peers, the raw node-redis floor. */
const LABELS = ['ours', 'ours (ioredis)', 'node-redlock', 'redlock-universal', 'redis-semaphore', 'raw floor'];
/** The hot key's: the libraries that retry (the raw floor does not). */
const HOT_KEY_LABELS = ['ours', 'node-redlock', 'redlock-universal', 'redis-semaphore'];
const names = new Map(contenders.map((spec) => [spec.label, spec.name]));

/** A stored run: what bench/readme.ts reads (bench/results/own-latest.json, and `own` in a full `npm run bench`'s record). */
export interface OwnRunRecord extends OwnStored {
  readonly date: string;
  readonly commit?: string;
  readonly command: string;
  readonly quick: boolean;
  readonly machine: string;
  readonly plan: OwnPlan;
  readonly contenders: readonly { readonly label: string; readonly name: string | undefined }[];
  readonly measures: readonly Measure[];
  /** The masters' server (older records lack it: Redis 7.0, the PATH's). */
  readonly server?: OwnServer;
}

export interface OwnRun {
  /** The header, every table and the per-round table; no Targets. */
  readonly tables: string;
  readonly measures: readonly Measure[];
  readonly record: OwnRunRecord;
}

export const OWN_TARGETS_TITLE = 'Targets — own process (what the README shows)';

interface Scenario {
  readonly id: string;
  readonly title: string;
  readonly labels: readonly string[];
  /** Before the first round (S6: start its processes), and after the last. */
  readonly setUp?: () => Promise<void>;
  readonly tearDown?: () => Promise<void>;
  /** Unmeasured work before each slice: after the others' slices, bring this process back up to speed. */
  warm(label: string, keyPrefix: string): Promise<void>;
  measure(label: string, keyPrefix: string): Promise<OwnSlice>;
}

let masters: RedisMaster[] = [];
let stats: MasterStats | undefined;
const children = new Map<string, ContenderChild<OwnWork, OwnSlice>>();
const groups = new Map<string, ContenderProcesses>();

export interface OwnOptions {
  readonly plan: OwnPlan;
  /** Scenario groups (OWN_GROUPS) to run; all when undefined. */
  readonly only?: readonly string[];
  /** The command line, as the record names it. */
  readonly command: string;
  /** The masters' server binary and its name in lab/servers.ts (`--server`); default: the PATH's redis-server or REDLOCK_SERVER_BINARY. */
  readonly server?: { readonly name: string; readonly binary: string };
  readonly quick: boolean;
  /** Called before each slice. */
  readonly progress: (text: string, done: number, total: number) => void;
}

export async function runOwnProcess(options: OwnOptions): Promise<OwnRun> {
  const { plan, only } = options;
  const measuredCommit = commitOf();
  const wanted = (group: string): boolean => !only || only.includes(group);
  try {
    masters = await startMasters(OWN_MASTERS, options.server ? { server: options.server.binary } : {});
    const urls = masters.map((master) => master.url);
    let rttMs = await measureRtt(urls[0]!);
    const scenarios = ownScenarios(plan, wanted, urls);
    const needed = LABELS.filter((label) => scenarios.some((scenario) => scenario.id !== 'S6' && scenario.labels.includes(label)));
    const started = await Promise.allSettled(
      needed.map((label) => ContenderChild.start<OwnWork, OwnSlice>('./own-process.ts', label, urls, 'distinct')),
    );
    for (const outcome of started) if (outcome.status === 'fulfilled') children.set(outcome.value.label, outcome.value);
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    stats = await MasterStats.connect(urls);
    const server: OwnServer = { ...(options.server ? { name: options.server.name } : {}), version: await stats.server() };

    // Warm every process up, one at a time (their JIT and connections), before anything is measured.
    for (const child of children.values()) {
      options.progress(`warm-up · ${child.label}`, 0, 1);
      await child.ask({ kind: 'warm', cycles: plan.firstWarmCycles, keyPrefix: `bench:own:warm:${child.label}`, deadlineMs: DEADLINE_MS }, 120_000);
    }
    const total = scenarios.reduce((sum, scenario) => sum + plan.rounds * scenario.labels.length, 0);
    let done = 0;
    const records: OwnRecord[] = [];
    for (const scenario of scenarios) {
      await scenario.setUp?.();
      const hung = new Set<string>();
      for (let round = 0; round < plan.rounds; round++) {
        for (let k = 0; k < scenario.labels.length; k++) {
          const label = scenario.labels[(k + round) % scenario.labels.length]!;
          options.progress(`${scenario.id} · round ${round + 1}/${plan.rounds} · ${label}`, done++, total);
          if (hung.has(label)) continue;
          const keyPrefix = `bench:own:${scenario.id.replace(/ /g, '-')}:${label.replace(/\W+/g, '-')}:${round}`;
          await scenario.warm(label, `${keyPrefix}:warm`);
          const before = await stats.read();
          const slice = await scenario.measure(label, keyPrefix);
          const server = masterDelta(before, await stats.read());
          records.push({ scenario: scenario.id, round, label, slice, server });
          if (slice.hung > 0) hung.add(label);
        }
      }
      await scenario.tearDown?.();
    }
    options.progress('', total, total);
    // Read again at the end, the lower kept, as bench/run.ts does (one read beside a busy start can come out high).
    rttMs = Math.min(rttMs, await measureRtt(urls[0]!));
    return report(options, scenarios, records, rttMs, measuredCommit, server);
  } finally {
    await stopOwnProcess();
  }
}

function ownScenarios(plan: OwnPlan, wanted: (group: string) => boolean, urls: readonly string[]): Scenario[] {
  const askChild = (label: string): ContenderChild<OwnWork, OwnSlice> => {
    const child = children.get(label);
    if (!child) throw new Error(`no process for ${label}`);
    return child;
  };
  const warmChild = (label: string, keyPrefix: string): Promise<void> =>
    askChild(label).ask({ kind: 'warm', cycles: plan.warmCycles, keyPrefix, deadlineMs: DEADLINE_MS }, 120_000).then(() => undefined);
  const inChild = (id: string, title: string, labels: readonly string[], work: (keyPrefix: string) => OwnWork, timeoutMs: number): Scenario => ({
    id, title, labels, warm: warmChild,
    measure: (label, keyPrefix) => askChild(label).ask(work(keyPrefix), timeoutMs),
  });
  const hotKeyTimeoutMs = plan.hotKeyMs + 2 * HOT_KEY_DEADLINE_MS + 10_000;
  const s6Round = (label: string, key: string, durationMs: number): Promise<OwnSlice> => {
    const group = groups.get(label);
    if (!group) throw new Error(`no S6 processes for ${label}`);
    return group.round({ key, durationMs, workers: S6_WORKERS, sectionMs: HOT_KEY_SECTION_MS, deadlineMs: HOT_KEY_DEADLINE_MS }).then((results) => {
      const tally = newTally();
      addRound(tally, results, S6_WORKERS);
      return ownSlice(tally, results.reduce((sum, result) => sum + result.cpuUs, 0), true);
    });
  };
  return [
    ...(wanted('S1')
      ? [inChild(
          'S1', 'S1 — sequential acquire + release, 1 worker, each library in its own process', LABELS,
          (keyPrefix) => ({ kind: 'S1', cycles: plan.s1Cycles, keyPrefix, deadlineMs: DEADLINE_MS }), 120_000,
        )]
      : []),
    ...(wanted('S2') ? S2_WORKERS : []).map((workers) => inChild(
      `S2 ${workers} workers`, `S2 — ${workers} concurrent workers, distinct keys, each library in its own process`, LABELS,
      (keyPrefix) => ({ kind: 'S2', workers, durationMs: plan.s2Ms, keyPrefix, deadlineMs: DEADLINE_MS }), plan.s2Ms + 2 * DEADLINE_MS + 10_000,
    )),
    ...(wanted('S3')
      ? [inChild(
          'S3', `S3 — hot key: ${S3_WORKERS} workers in each library's one process, one resource, ${HOT_KEY_SECTION_MS} ms critical section, defaults`,
          HOT_KEY_LABELS,
          (keyPrefix) => ({ kind: 'S3', workers: S3_WORKERS, durationMs: plan.hotKeyMs, sectionMs: HOT_KEY_SECTION_MS, keyPrefix, deadlineMs: HOT_KEY_DEADLINE_MS }),
          hotKeyTimeoutMs,
        )]
      : []),
    ...(wanted('S6')
      ? [{
          id: 'S6',
          title: `S6 — hot key across processes: ${S6_PROCESSES} processes × ${S6_WORKERS} workers of each library, the others idle, one resource, ` +
            `${HOT_KEY_SECTION_MS} ms critical section, defaults`,
          labels: HOT_KEY_LABELS,
          setUp: async () => {
            const started = await Promise.allSettled(HOT_KEY_LABELS.map((label) => ContenderProcesses.start(label, urls, S6_PROCESSES)));
            started.forEach((outcome, i) => outcome.status === 'fulfilled' && groups.set(HOT_KEY_LABELS[i]!, outcome.value));
            const failed = started.find((outcome) => outcome.status === 'rejected');
            if (failed) throw failed.reason;
          },
          tearDown: stopGroups,
          warm: (label: string, keyPrefix: string) => s6Round(label, keyPrefix, plan.hotKeyWarmMs).then(() => undefined),
          measure: (label: string, keyPrefix: string) => s6Round(label, keyPrefix, plan.hotKeyMs),
        }]
      : []),
  ];
}

function report(options: OwnOptions, scenarios: readonly Scenario[], records: readonly OwnRecord[], rttMs: number, commit: string | undefined, server: OwnServer): OwnRun {
  const { plan, command } = options;
  const machine = machineText();
  const header = `## Own-process benchmark — \`${command}\`\n\n${new Date().toISOString().slice(0, 10)} · ${machine} · ${OWN_MASTERS} local ${server.version} masters · ` +
    `ttl 10 s · per-call deadline ${DEADLINE_MS} ms (hot key ${HOT_KEY_DEADLINE_MS / 1000} s) · one round trip (PING p50) ${rttMs.toFixed(3)} ms · ` +
    `${plan.rounds} rounds, each library once per round in its own process, the others idle, ` +
    `the order rotated each round · S1: ${plan.firstWarmCycles} warm-up cycles per library before the first round, then per round ` +
    `${plan.warmCycles} unmeasured + ${plan.s1Cycles} measured · S2: ${plan.s2Ms} ms per library per round · ` +
    `S3, S6: ${plan.hotKeyMs} ms per library per round (S6 after an unmeasured ${plan.hotKeyWarmMs} ms) · ` +
    `server cost: INFO cpu and INFO commandstats (every command but INFO) of the ${OWN_MASTERS} masters, summed, over the slice, per cycle\n`;
  const stored = { plan, records, rttMs, server };
  const results = ownResults(stored);
  const measures = ownMeasures(results, records);
  const tables = [
    header,
    ...scenarios.map((scenario) => ownTable(scenario.title, scenario.id, scenario.labels, names, records, rttMs)),
    roundsTable(results, plan.rounds),
  ].join('\n');
  const labels = LABELS.filter((label) => records.some((record) => record.label === label));
  const record: OwnRunRecord = {
    date: new Date().toISOString(), ...(commit ? { commit } : {}), command, quick: options.quick, machine, plan, rttMs,
    contenders: labels.map((label) => ({ label, name: names.get(label) })),
    records,
    measures,
    server,
  };
  return { tables, measures, record };
}

/** The run's markdown whole: its tables, then its Targets block. */
export const ownMarkdown = (run: OwnRun): string => `${run.tables}\n${targetsMarkdown(run.measures, OWN_TARGETS_TITLE)}`;

/** Writes bench/results/`name`.{md,json}; returns their paths from the repository's root. */
export function writeOwnRun(run: OwnRun, name: string): string {
  const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(`${resultsDir}${name}.md`, `${ownMarkdown(run)}\n`);
  writeFileSync(`${resultsDir}${name}.json`, `${JSON.stringify(run.record, null, 2)}\n`);
  return `bench/results/${name}.md, bench/results/${name}.json`;
}

async function stopGroups(): Promise<void> {
  await Promise.all([...groups.values()].map((group) => group.stop()));
  groups.clear();
}

/** Stops whatever this mode started (its masters, its processes); safe to call more than once, on any way out. */
export async function stopOwnProcess(): Promise<void> {
  await stats?.close().catch(() => undefined);
  stats = undefined;
  await Promise.all([...children.values()].map((child) => child.stop()));
  children.clear();
  await stopGroups();
  killAllChildren();
  for (const master of masters.splice(0)) master.stop();
}
