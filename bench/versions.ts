/**
 * `npm run bench:versions -- --base <dist/index.js> [--head <dist/index.js>]`: two builds of this
 * library side by side in one run, for a change that must not move the figures (a restructuring):
 * S1 (one worker, sequential acquire + release) and S2 (concurrent workers on distinct keys), with
 * the bench's own slices (bench/scenarios.ts) on 5 throwaway masters (src/testing/redis-server.ts).
 *
 * As `npm run bench` treats its contenders: one process, both builds loaded, slices alternating
 * base, head, then head, base in the next round, so machine noise hits both alike. Each round is
 * one sample; the table gives every round and the median of the rounds' head/base ratios with
 * their range, which is the noise to judge a difference against. It prints and asserts nothing.
 *
 * Options: --rounds (12), --s1-cycles per slice (2000), --s2-ms per slice (2500), --workers (the
 * bench's S2 worker counts, comma-separated).
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { redlockContender, type Contender } from './contender.js';
import { rowOf } from './report.js';
import { concurrentSlice, newTally, sequentialSlice, type Tally } from './scenarios.js';
import { S2_WORKERS } from './targets.js';
import { runToEnd } from './lifetime.js';

const { values: options } = parseArgs({
  options: {
    base: { type: 'string' },
    head: { type: 'string', default: 'dist/index.js' },
    rounds: { type: 'string', default: '12' },
    's1-cycles': { type: 'string', default: '2000' },
    's2-ms': { type: 'string', default: '2500' },
    workers: { type: 'string', default: S2_WORKERS.join(',') },
  },
});
if (!options.base) {
  console.error('usage: npm run bench:versions -- --base <path to a dist/index.js> [--head <path>] [--rounds 12] [--s1-cycles 2000] [--s2-ms 2500] [--workers 64,256]');
  process.exit(2);
}
const rounds = Number(options.rounds);
const s1Cycles = Number(options['s1-cycles']);
const s2Ms = Number(options['s2-ms']);
const workerCounts = options.workers.split(',').map(Number);
/** The bench's per-call deadline for S1 and S2 (bench/run.ts). */
const DEADLINE_MS = 2_000;
const WARM_UP_CYCLES = 500;

interface Version {
  readonly label: 'base' | 'head';
  readonly path: string;
  /** The commit of the work tree the build sits in, where it is one. */
  readonly commit: string;
  contender?: Contender;
}

interface Scenario {
  readonly id: string;
  run(contender: Contender, tally: Tally, keyPrefix: string): Promise<void>;
}

/** One version's one slice: its tally and the process CPU it took (user + system). */
interface Slice {
  readonly tally: Tally;
  readonly cpuUs: number;
}

const versions: Version[] = [
  { label: 'base', path: resolve(options.base), commit: commitOf(options.base) },
  { label: 'head', path: resolve(options.head), commit: commitOf(options.head) },
];
const scenarios: Scenario[] = [
  {
    id: 'S1',
    run: (contender, tally, keyPrefix) => sequentialSlice({ contender, tally, keyPrefix, deadlineMs: DEADLINE_MS }, s1Cycles),
  },
  ...workerCounts.map((workers): Scenario => ({
    id: `S2 @ ${workers}`,
    run: (contender, tally, keyPrefix) => concurrentSlice({ contender, tally, keyPrefix, deadlineMs: DEADLINE_MS }, workers, s2Ms),
  })),
];
let masters: RedisMaster[] = [];

/**
 * Ours as the bench's `ours` runs S1 and S2 (bench/libraries.ts, profile 'distinct': node-redis
 * clients it owns, batching on), but from the build at `path`: libraries.ts loads ../dist on import.
 */
async function oursAt(path: string, urls: readonly string[]): Promise<Contender> {
  const { Redlock } = (await import(pathToFileURL(path).href)) as typeof import('../src/index.js');
  return redlockContender(new Redlock([...urls], { batching: true }));
}

/** slices[scenario][version][round]. */
async function measure(): Promise<Slice[][][]> {
  const slices = scenarios.map(() => versions.map((): Slice[] => []));
  for (let round = 0; round < rounds; round++) {
    for (const [s, scenario] of scenarios.entries()) {
      for (let k = 0; k < versions.length; k++) {
        const v = (k + round) % versions.length;
        const version = versions[v]!;
        const done = slices[s]![v]!;
        process.stderr.write(`round ${round + 1}/${rounds} · ${scenario.id} · ${version.label}\n`);
        // A version that hung is not run again in that scenario (as in bench/run.ts).
        if (done.some((slice) => slice.tally.hung > 0)) continue;
        const tally = newTally();
        const cpuBefore = process.cpuUsage();
        await scenario.run(version.contender!, tally, `versions:${scenario.id.replace(/ /g, '')}:${version.label}:${round}`);
        const cpu = process.cpuUsage(cpuBefore);
        done.push({ tally, cpuUs: cpu.user + cpu.system });
      }
    }
  }
  return slices;
}

interface Figures {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerCycle: number;
  readonly opsPerSecond: number;
  readonly failures: number;
  readonly hung: number;
}

/** One figure set from slices pooled (one histogram, the bench's way of adding rounds). */
function figures(slices: readonly Slice[]): Figures {
  const tally = newTally();
  let cpuUs = 0;
  for (const slice of slices) {
    tally.latencyUs.add(slice.tally.latencyUs);
    tally.cycles += slice.tally.cycles;
    tally.measuredMs += slice.tally.measuredMs;
    tally.failures += slice.tally.failures;
    tally.hung += slice.tally.hung;
    cpuUs += slice.cpuUs;
  }
  const row = rowOf('', '', '', tally, false);
  return {
    p50Ms: row.p50Ms,
    p99Ms: row.p99Ms,
    cpuUsPerCycle: tally.cycles ? cpuUs / tally.cycles : Number.NaN,
    opsPerSecond: row.opsPerSecond,
    failures: tally.failures,
    hung: tally.hung,
  };
}

interface Metric {
  readonly name: string;
  readonly scenario: number;
  readonly digits: number;
  value(figures: Figures): number;
}

const metrics: Metric[] = [
  { name: 'S1 p50 ms', scenario: 0, digits: 3, value: (f) => f.p50Ms },
  { name: 'S1 p99 ms', scenario: 0, digits: 3, value: (f) => f.p99Ms },
  { name: 'S1 CPU µs/cycle', scenario: 0, digits: 0, value: (f) => f.cpuUsPerCycle },
  ...workerCounts.map((workers, i): Metric => ({ name: `S2 @ ${workers} ops/s`, scenario: i + 1, digits: 0, value: (f) => f.opsPerSecond })),
];

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** The summary: each version pooled over its rounds, and the rounds' head/base ratios. */
function summaryTable(slices: Slice[][][]): string {
  const lines = metrics.map((metric) => {
    const [base, head] = slices[metric.scenario]!;
    const pooled = [base!, head!].map((list) => metric.value(figures(list)).toFixed(metric.digits));
    const paired = Math.min(base!.length, head!.length);
    const ratios = Array.from({ length: paired }, (_, r) => metric.value(figures([head![r]!])) / metric.value(figures([base![r]!])))
      .filter(Number.isFinite);
    const spread = ratios.length
      ? `${median(ratios).toFixed(3)}× | ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}×`
      : '— | —';
    return `| ${metric.name} | ${pooled.join(' | ')} | ${spread} |`;
  });
  return ['| measure | base (all rounds) | head (all rounds) | head/base, median of rounds | range over rounds |', '|---|---:|---:|---:|---:|', ...lines].join('\n');
}

/** Every round: "base / head" per measure, and which of them ran first. */
function roundsTable(slices: Slice[][][]): string {
  const lines = Array.from({ length: rounds }, (_, round) => {
    const cells = metrics.map((metric) =>
      slices[metric.scenario]!.map((list) => (list[round] ? metric.value(figures([list[round]])).toFixed(metric.digits) : '—')).join(' / '),
    );
    return `| ${round + 1} | ${versions[round % versions.length]!.label} | ${cells.join(' | ')} |`;
  });
  const header = `| round | first | ${metrics.map((metric) => `${metric.name} (base / head)`).join(' | ')} |`;
  return [header, `|---:|---|${metrics.map(() => '---:').join('|')}|`, ...lines].join('\n');
}

/** Failures and hangs, when any: a figure beside them is not the version's speed. */
function troubles(slices: Slice[][][]): string {
  const notes = scenarios.flatMap((scenario, s) =>
    versions.flatMap((version, v) => {
      const { failures, hung } = figures(slices[s]![v]!);
      return failures || hung ? [`${scenario.id} ${version.label}: ${failures} failed acquires, ${hung} hung`] : [];
    }),
  );
  return notes.length ? `\nNot clean: ${notes.join('; ')}.\n` : '\nNo failed or hung cycles.\n';
}

function header(loadStart: readonly number[], seconds: number): string {
  const cpus = os.cpus();
  const load = (avg: readonly number[]): string => avg.map((value) => value.toFixed(2)).join(' ');
  return [
    `## ours at two builds — \`${['npm run bench:versions --', ...process.argv.slice(2)].join(' ')}\``,
    '',
    ...versions.map((version) => `- ${version.label}: ${version.path}${version.commit ? ` (${version.commit})` : ''}`),
    `- ${new Date().toISOString().slice(0, 16).replace('T', ' ')} · ${cpus[0]?.model.trim() ?? 'cpu'} × ${cpus.length} · Node ${process.version} · ` +
      `5 local redis-server masters · ttl 10 s · batching on (the bench's \`ours\`)`,
    `- ${rounds} rounds, each: S1 ${s1Cycles} cycles, S2 ${s2Ms} ms at ${workerCounts.join(' and ')} workers, per version, alternating (base first in odd rounds)`,
    `- load average (1, 5, 15 min) at start ${load(loadStart)}, at end ${load(os.loadavg())}; took ${Math.round(seconds)} s`,
    '- head/base: above 1 means head is slower for latency and CPU, faster for ops/s. CPU is this whole process during the slice.',
  ].join('\n');
}

/** The commit (short, "+" if its tree has changes) of the git work tree holding `path`, or ''. */
function commitOf(path: string): string {
  const cwd = dirname(resolve(path));
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
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
  for (const version of versions) {
    version.contender = await oursAt(version.path, urls);
    process.stderr.write(`warm-up · ${version.label}\n`);
    await sequentialSlice({ contender: version.contender, tally: newTally(), keyPrefix: `versions:warm:${version.label}`, deadlineMs: DEADLINE_MS }, WARM_UP_CYCLES);
  }
  const slices = await measure();
  const seconds = (performance.now() - startedAt) / 1000;
  console.log([header(loadStart, seconds), '', summaryTable(slices), troubles(slices), roundsTable(slices), ''].join('\n'));
}

async function cleanUp(): Promise<void> {
  for (const version of versions) await version.contender?.close().catch(() => undefined);
  for (const master of masters) master.stop();
}

await runToEnd(main, cleanUp);
