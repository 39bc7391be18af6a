/**
 * `npm run bench:own [-- --quick] [--rounds N] [--only S1,S2]`: every contender alone in a process
 * of its own (bench/own-process.ts), as a user runs it, against 5 throwaway masters. The processes
 * start once and stay; each round runs every contender once, one at a time while the others idle,
 * in an order rotated by one each round, and a ratio of ours to a peer is taken within each round.
 *
 * S1: one worker, sequential acquire + release (warm-up cycles first, not measured); per slice its
 * p50 and p99, the process' CPU per cycle (process.cpuUsage, user + system), and the masters' cost
 * per cycle: INFO cpu (used_cpu_user + used_cpu_sys) and INFO commandstats usec, summed over the
 * five masters, read before and after the slice. S2: 64 and 256 workers on distinct keys, for a
 * duration. Output: markdown on stdout and in bench/results/own-latest.md, the records beside it
 * (own-latest.json); a --quick or --only run writes bench/results/own-<timestamp>.{md,json} instead.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startMasters, type RedisMaster } from '../lab/redis-server.js';
import { ContenderChild, killAllChildren } from './children.js';
import { contenders } from './libraries.js';
import { MasterStats, masterDelta } from './master-stats.js';
import type { OwnSlice, OwnWork } from './own-process.js';
import { compare, ownComparisons, ownMeasures, ownTable, ratioTable, type OwnRecord } from './own-report.js';
import { commitOf, machineText } from './provenance.js';
import { S2_WORKERS, targetsMarkdown } from './targets.js';
import { runToEnd } from './lifetime.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const only = option('--only')?.split(',');
const wanted = (group: string): boolean => !only || only.includes(group);
/**
 * Sized so a full run takes about 5 minutes on 2 cores and --quick under one: S1 slices of
 * `s1Cycles` after `warmCycles` unmeasured ones (and `firstWarmCycles` before the first round), S2
 * slices of `s2Ms`.
 */
const plan = {
  rounds: Number(option('--rounds') ?? (quick ? 3 : 5)),
  firstWarmCycles: quick ? 500 : 2_000,
  warmCycles: quick ? 100 : 200,
  s1Cycles: quick ? 1_000 : 4_000,
  s2Ms: quick ? 500 : 2_500,
};
if (!Number.isInteger(plan.rounds) || plan.rounds < 1) throw new Error(`--rounds takes a whole number ≥ 1, not ${option('--rounds')}`);
const DEADLINE_MS = 2_000;
/** S1 and S2's own: ours on URLs (node-redis) and on ioredis clients, the peers, the raw node-redis floor. */
const LABELS = ['ours', 'ours (ioredis)', 'node-redlock', 'redlock-universal', 'redis-semaphore', 'raw floor'];
const names = new Map(contenders.map((spec) => [spec.label, spec.name]));

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
const measuredCommit = commitOf();
let masters: RedisMaster[] = [];
let stats: MasterStats | undefined;
const children: ContenderChild<OwnWork, OwnSlice>[] = [];

interface Scenario {
  readonly id: string;
  readonly title: string;
  work(keyPrefix: string): OwnWork;
  readonly timeoutMs: number;
}

async function main(): Promise<void> {
  masters = await startMasters(5);
  const urls = masters.map((master) => master.url);
  const started = await Promise.allSettled(
    LABELS.map((label) => ContenderChild.start<OwnWork, OwnSlice>('./own-process.ts', label, urls, 'distinct')),
  );
  for (const outcome of started) if (outcome.status === 'fulfilled') children.push(outcome.value);
  const failed = started.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  stats = await MasterStats.connect(urls);

  const scenarios: Scenario[] = [
    ...(wanted('S1')
      ? [{
          id: 'S1',
          title: 'S1 — sequential acquire + release, 1 worker, each library in its own process',
          work: (keyPrefix: string): OwnWork => ({ kind: 'S1', cycles: plan.s1Cycles, keyPrefix, deadlineMs: DEADLINE_MS }),
          timeoutMs: 120_000,
        }]
      : []),
    ...(wanted('S2') ? S2_WORKERS : []).map((workers) => ({
      id: `S2 ${workers} workers`,
      title: `S2 — ${workers} concurrent workers, distinct keys, each library in its own process`,
      work: (keyPrefix: string): OwnWork => ({ kind: 'S2', workers, durationMs: plan.s2Ms, keyPrefix, deadlineMs: DEADLINE_MS }),
      timeoutMs: plan.s2Ms + 2 * DEADLINE_MS + 10_000,
    })),
  ];

  // Warm every process up, one at a time (their JIT and connections), before anything is measured.
  for (const child of children) {
    progress(`warm-up · ${child.label}`);
    await child.ask({ kind: 'warm', cycles: plan.firstWarmCycles, keyPrefix: `bench:own:warm:${child.label}`, deadlineMs: DEADLINE_MS }, 120_000);
  }
  const records: OwnRecord[] = [];
  for (const scenario of scenarios) {
    const hung = new Set<string>();
    for (let round = 0; round < plan.rounds; round++) {
      for (let k = 0; k < children.length; k++) {
        const child = children[(k + round) % children.length]!;
        if (hung.has(child.label)) continue;
        progress(`${scenario.id} · round ${round + 1}/${plan.rounds} · ${child.label}`);
        const keyPrefix = `bench:own:${scenario.id.replace(/ /g, '-')}:${child.label.replace(/\W+/g, '-')}:${round}`;
        // After the others' slices: a few cycles to bring this process back up to speed, unmeasured.
        await child.ask({ kind: 'warm', cycles: plan.warmCycles, keyPrefix: `${keyPrefix}:warm`, deadlineMs: DEADLINE_MS }, 120_000);
        const before = await stats.read();
        const slice = await child.ask(scenario.work(keyPrefix), scenario.timeoutMs);
        const server = masterDelta(before, await stats.read());
        records.push({ scenario: scenario.id, round, label: child.label, slice, server });
        if (slice.hung > 0) hung.add(child.label);
      }
    }
  }
  progress('');
  report(scenarios, records);
}

function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
}

function report(scenarios: readonly Scenario[], records: readonly OwnRecord[]): void {
  const command = `npm run bench:own${quick || only || option('--rounds') ? ' --' : ''}${quick ? ' --quick' : ''}` +
    `${option('--rounds') ? ` --rounds ${plan.rounds}` : ''}${only ? ` --only ${only.join(',')}` : ''}`;
  const machine = machineText();
  const header = `## Own-process benchmark — \`${command}\`\n\n${new Date().toISOString().slice(0, 10)} · ${machine} · 5 local redis-server masters · ` +
    `ttl 10 s · per-call deadline ${DEADLINE_MS} ms · ${plan.rounds} rounds, each library once per round in its own process, the others idle, ` +
    `the order rotated each round · S1: ${plan.firstWarmCycles} warm-up cycles per library before the first round, then per round ` +
    `${plan.warmCycles} unmeasured + ${plan.s1Cycles} measured · S2: ${plan.s2Ms} ms per library per round · ` +
    'server cost: INFO cpu and INFO commandstats (every command but INFO) of the 5 masters, summed, over the slice, per cycle\n';
  const results = ownComparisons(S2_WORKERS)
    .filter((comparison) => scenarios.some((scenario) => scenario.id === comparison.scenario))
    .map((comparison) => compare(records, comparison, plan.rounds));
  const measures = ownMeasures(results);
  const markdown = [
    header,
    ...scenarios.map((scenario) => ownTable(scenario.title, scenario.id, LABELS, names, records)),
    ratioTable(results, plan.rounds),
    targetsMarkdown(measures),
  ].join('\n');
  console.log(`\n${markdown}`);
  mkdirSync(resultsDir, { recursive: true });
  const name = quick || only || option('--rounds') ? `own-${new Date().toISOString().replace(/[:.]/g, '-')}` : 'own-latest';
  const json = {
    date: new Date().toISOString(), commit: measuredCommit, command, quick, machine, plan,
    contenders: LABELS.map((label) => ({ label, name: names.get(label) })),
    records,
    ratios: results.map(({ comparison, ...rest }) => ({ id: comparison.id, goal: comparison.goal, ...rest })),
    measures,
  };
  writeFileSync(`${resultsDir}${name}.md`, `${markdown}\n`);
  writeFileSync(`${resultsDir}${name}.json`, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`results: bench/results/${name}.md, bench/results/${name}.json`);
}

async function cleanUp(): Promise<void> {
  await stats?.close().catch(() => undefined);
  await Promise.all(children.map((child) => child.stop()));
  killAllChildren();
  for (const master of masters) master.stop();
}

await runToEnd(main, cleanUp);
