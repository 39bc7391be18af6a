/**
 * `npm run bench:versions -- --base <dist/index.js> [--head <dist/index.js>]`: two builds of this
 * library side by side in one run, for a change that must not move the figures (a restructuring)
 * or should lower them: S1 (one worker, sequential acquire + release) and S2 (concurrent workers on
 * distinct keys), with the bench's own slices (bench/scenarios.ts) on 5 throwaway masters
 * (src/testing/redis-server.ts).
 *
 * Each build runs alone in a process of its own, as `npm run bench:own` runs its contenders
 * (bench/own-process.ts, forked by bench/children.ts; the build as the bench's `ours`,
 * bench/contender.ts): both start once and stay, and each slice runs on one while the other idles,
 * after unmeasured warm-up cycles of its own. `--in-process` loads both builds into this one
 * process instead (the mode of the first runs), where they share the event loop, the heap and the
 * JIT's warmth. Either way the rounds alternate, base first in odd rounds and head first in even
 * ones, so machine noise hits both alike, and the masters' counters are read around each slice
 * (bench/master-stats.ts): their command time and CPU per S1 cycle beside the process' CPU.
 *
 * Each round is one sample; the table gives every round and, per measure, each build's median over
 * the rounds and the median of the rounds' head/base ratios with their range, which is the noise
 * to judge a difference against. It prints and asserts nothing.
 *
 * Options: --rounds (12), --s1-cycles per slice (2000), --s2-ms per slice (2500), --workers (the
 * bench's S2 worker counts, comma-separated), --in-process. A build loads its dependencies from
 * where it sits: one copied out of a checkout needs a node_modules beside it (a symbolic link will do).
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { ContenderChild, killAllChildren } from './children.js';
import { BUILD_LABEL, oursFromBuild } from './contender.js';
import { runToEnd } from './lifetime.js';
import { MasterStats, masterDelta } from './master-stats.js';
import { metrics, type Metric, type OwnRecord } from './own-report.js';
import { ownWork, type OwnSlice, type OwnWork } from './own-slice.js';
import { fixed } from './report.js';
import { median, range, ratiosPerRound } from './rounds.js';
import { S2_WORKERS } from './targets.js';

const { values: options } = parseArgs({
  options: {
    base: { type: 'string' },
    head: { type: 'string', default: 'dist/index.js' },
    rounds: { type: 'string', default: '12' },
    's1-cycles': { type: 'string', default: '2000' },
    's2-ms': { type: 'string', default: '2500' },
    workers: { type: 'string', default: S2_WORKERS.join(',') },
    'in-process': { type: 'boolean', default: false },
  },
});
if (!options.base) {
  console.error('usage: npm run bench:versions -- --base <path to a dist/index.js> [--head <path>] [--rounds 12] [--s1-cycles 2000] [--s2-ms 2500] [--workers 64,256] [--in-process]');
  process.exit(2);
}
const rounds = Number(options.rounds);
const s1Cycles = Number(options['s1-cycles']);
const s2Ms = Number(options['s2-ms']);
const workerCounts = options.workers.split(',').map(Number);
const inProcess = options['in-process'];
/** The bench's per-call deadline for S1 and S2 (bench/run.ts). */
const DEADLINE_MS = 2_000;
const WARM_UP_CYCLES = 500;
/** Before each slice of a build in its own process: the other ran meanwhile (bench/own-run.ts's full plan). */
const SLICE_WARM_UP_CYCLES = 200;

/** Where a build's slices run: a process of its own, or this one. */
interface Runner {
  run(work: OwnWork, timeoutMs: number): Promise<OwnSlice>;
  close(): Promise<void>;
}

interface Version {
  readonly label: 'base' | 'head';
  readonly path: string;
  /** The commit of the work tree the build sits in, where it is one. */
  readonly commit: string;
  runner?: Runner;
}

interface Scenario {
  readonly id: string;
  readonly timeoutMs: number;
  work(keyPrefix: string): OwnWork;
}

const versions: Version[] = [
  { label: 'base', path: resolve(options.base), commit: commitOf(options.base) },
  { label: 'head', path: resolve(options.head), commit: commitOf(options.head) },
];
const scenarios: Scenario[] = [
  { id: 'S1', timeoutMs: 120_000, work: (keyPrefix) => ({ kind: 'S1', cycles: s1Cycles, keyPrefix, deadlineMs: DEADLINE_MS }) },
  ...workerCounts.map((workers): Scenario => ({
    id: `S2 @ ${workers}`,
    timeoutMs: s2Ms + 2 * DEADLINE_MS + 10_000,
    work: (keyPrefix) => ({ kind: 'S2', workers, durationMs: s2Ms, keyPrefix, deadlineMs: DEADLINE_MS }),
  })),
];

/** What the tables show: S1's latency, the process' and the masters' cost per cycle; S2's throughput. */
const measures: readonly { readonly scenario: string; readonly metric: Metric }[] = [
  ...[metrics.p50, metrics.p99, metrics.cpu, metrics.serverCommands, metrics.serverCommandsOnce, metrics.serverCpu].map((metric) => ({ scenario: 'S1', metric })),
  ...workerCounts.map((workers) => ({ scenario: `S2 @ ${workers}`, metric: metrics.opsPerSecond })),
];
const measureName = ({ scenario, metric }: (typeof measures)[number]): string =>
  `${scenario} ${metric.name.replace(/ \(.*\)$/, '')}${metric.unit ? ` ${metric.unit}` : ''}`;

let masters: RedisMaster[] = [];
let stats: MasterStats | undefined;

async function runnerFor(path: string, urls: readonly string[]): Promise<Runner> {
  if (inProcess) {
    const contender = await oursFromBuild(path, urls);
    return { run: (work) => ownWork(contender, work), close: () => contender.close() };
  }
  const child = await ContenderChild.start<OwnWork, OwnSlice>('./own-process.ts', `${BUILD_LABEL}${path}`, urls, 'distinct');
  return { run: (work, timeoutMs) => child.ask(work, timeoutMs), close: () => child.stop() };
}

/** Every slice, as bench:own records them: the scenario, the round, the build's label, its figures and the masters'. */
async function measure(): Promise<OwnRecord[]> {
  const records: OwnRecord[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const scenario of scenarios) {
      for (let k = 0; k < versions.length; k++) {
        const version = versions[(k + round) % versions.length]!;
        process.stderr.write(`round ${round + 1}/${rounds} · ${scenario.id} · ${version.label}\n`);
        // A version that hung is not run again in that scenario (as in bench/run.ts).
        if (records.some((record) => record.scenario === scenario.id && record.label === version.label && record.slice.hung > 0)) continue;
        const keyPrefix = `versions:${scenario.id.replace(/ /g, '')}:${version.label}:${round}`;
        if (!inProcess) await version.runner!.run({ kind: 'warm', cycles: SLICE_WARM_UP_CYCLES, keyPrefix: `${keyPrefix}:warm`, deadlineMs: DEADLINE_MS }, 120_000);
        const before = await stats!.read();
        const slice = await version.runner!.run(scenario.work(keyPrefix), scenario.timeoutMs);
        records.push({ scenario: scenario.id, round, label: version.label, slice, server: masterDelta(before, await stats!.read()) });
      }
    }
  }
  return records;
}

/** Per round, the measure's figure for `label`; NaN where it did not run, hung or measured nothing. */
function perRound(records: readonly OwnRecord[], { scenario, metric }: (typeof measures)[number], label: string): number[] {
  return Array.from({ length: rounds }, (_, round) => {
    const record = records.find((candidate) => candidate.scenario === scenario && candidate.label === label && candidate.round === round);
    return record && record.slice.hung === 0 ? metric.of(record) : Number.NaN;
  });
}

/** Each build's median over the rounds, and the rounds' head/base ratios: their median and range. */
function summaryTable(records: readonly OwnRecord[]): string {
  const lines = measures.map((measured) => {
    const [base, head] = versions.map((version) => perRound(records, measured, version.label));
    const ratios = ratiosPerRound(head!, base!).filter(Number.isFinite);
    const { min, max } = range(ratios);
    const spread = ratios.length ? `${fixed(median(ratios), 3)}× | ${fixed(min, 3)}–${fixed(max, 3)}×` : '— | —';
    const digits = measured.metric.digits;
    return `| ${measureName(measured)} | ${fixed(median(base!), digits)} | ${fixed(median(head!), digits)} | ${spread} |`;
  });
  return ['| measure | base (median of rounds) | head (median of rounds) | head/base, median of rounds | range over rounds |', '|---|---:|---:|---:|---:|', ...lines].join('\n');
}

/** Every round: "base / head" per measure, and which of them ran first. */
function roundsTable(records: readonly OwnRecord[]): string {
  const figures = measures.map((measured) => versions.map((version) => perRound(records, measured, version.label)));
  const lines = Array.from({ length: rounds }, (_, round) => {
    const cells = figures.map((both, m) => both.map((values) => fixed(values[round]!, measures[m]!.metric.digits)).join(' / '));
    return `| ${round + 1} | ${versions[round % versions.length]!.label} | ${cells.join(' | ')} |`;
  });
  const header = `| round | first | ${measures.map((measured) => `${measureName(measured)} (base / head)`).join(' | ')} |`;
  return [header, `|---:|---|${measures.map(() => '---:').join('|')}|`, ...lines].join('\n');
}

/** Failures and hangs, when any: a figure beside them is not the version's speed. */
function troubles(records: readonly OwnRecord[]): string {
  const notes = scenarios.flatMap((scenario) =>
    versions.flatMap((version) => {
      const own = records.filter((record) => record.scenario === scenario.id && record.label === version.label);
      const failures = own.reduce((sum, record) => sum + record.slice.failures, 0);
      const hung = own.reduce((sum, record) => sum + record.slice.hung, 0);
      return failures || hung ? [`${scenario.id} ${version.label}: ${failures} failed acquires, ${hung} hung`] : [];
    }),
  );
  return notes.length ? `\nNot clean: ${notes.join('; ')}.\n` : '\nNo failed or hung cycles.\n';
}

function header(loadStart: readonly number[], seconds: number): string {
  const cpus = os.cpus();
  const load = (avg: readonly number[]): string => avg.map((value) => value.toFixed(2)).join(' ');
  const where = inProcess
    ? 'both builds in this one process'
    : `each build in a process of its own, the other idle, ${SLICE_WARM_UP_CYCLES} unmeasured cycles before each slice`;
  return [
    `## ours at two builds — \`${['npm run bench:versions --', ...process.argv.slice(2)].join(' ')}\``,
    '',
    ...versions.map((version) => `- ${version.label}: ${version.path}${version.commit ? ` (${version.commit})` : ''}`),
    `- ${new Date().toISOString().slice(0, 16).replace('T', ' ')} · ${cpus[0]?.model.trim() ?? 'cpu'} × ${cpus.length} · Node ${process.version} · ` +
      `5 local redis-server masters · ttl 10 s · batching on (the bench's \`ours\`)`,
    `- ${where}; ${rounds} rounds, each: S1 ${s1Cycles} cycles, S2 ${s2Ms} ms at ${workerCounts.join(' and ')} workers, per version, alternating (base first in odd rounds)`,
    `- load average (1, 5, 15 min) at start ${load(loadStart)}, at end ${load(os.loadavg())}; took ${Math.round(seconds)} s`,
    `- head/base: above 1 means head is slower for latency and CPU, faster for ops/s. Process CPU: ${inProcess ? 'this whole process' : 'the build\'s process'} ` +
      'during the slice; server: the 5 masters\' INFO commandstats (every command but INFO) and INFO cpu over the slice, summed.',
  ].join('\n');
}

/** The commit (short, "+" if its tree has changes) of the git work tree holding `path`, or ''. */
function commitOf(path: string): string {
  const cwd = dirname(resolve(path));
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+` : head;
  } catch {
    return '';
  }
}

async function main(): Promise<void> {
  const startedAt = performance.now();
  const loadStart = os.loadavg();
  masters = await startMasters(5);
  const urls = masters.map((master) => master.url);
  stats = await MasterStats.connect(urls);
  for (const version of versions) {
    version.runner = await runnerFor(version.path, urls);
    process.stderr.write(`warm-up · ${version.label}\n`);
    await version.runner.run({ kind: 'warm', cycles: WARM_UP_CYCLES, keyPrefix: `versions:warm:${version.label}`, deadlineMs: DEADLINE_MS }, 120_000);
  }
  const records = await measure();
  const seconds = (performance.now() - startedAt) / 1000;
  console.log([header(loadStart, seconds), '', summaryTable(records), troubles(records), roundsTable(records), ''].join('\n'));
}

async function cleanUp(): Promise<void> {
  for (const version of versions) await version.runner?.close().catch(() => undefined);
  killAllChildren();
  await stats?.close().catch(() => undefined);
  for (const master of masters) master.stop();
}

await runToEnd(main, cleanUp);
