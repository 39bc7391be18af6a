/**
 * docs/benchmarks.md's table per server (issue 39): S1's plain cycle (one worker, acquire + release
 * of one key, nobody waiting) on each server of lab/servers.ts that a
 * `npm run bench:own -- --only S1 --server <name>` run was stored for (bench/results/own-<name>.json).
 * Per server: the masters' command time per cycle, a script's commands counted once, ours against
 * node-redlock (Lua on every server), judged on issue 39's target where the server has a
 * compare-and-delete (bench/own-report.ts); the same summed as commandstats lists it (issue 37's
 * measure); the p50 and process CPU ratios; and the commands each master counted per cycle, which
 * show whether the plain cycle went as native commands or as scripts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SERVERS } from '../lab/servers.js';
import { OWN_MASTERS } from './constants.js';
import { judge, metrics, NATIVE_COMMAND_TARGET, ownTargets, type Metric, type OwnRecord, type TargetResult } from './own-report.js';
import type { OwnRunRecord } from './own-run.js';
import { fixed } from './report.js';
import { median, range } from './rounds.js';
import { meets } from './targets.js';

export const BENCH_SERVERS_MARKERS = { start: '<!-- bench-servers:start -->', end: '<!-- bench-servers:end -->' } as const;

/** The results name of a run on `server` (bench/results/<it>.{md,json}). */
export const ownServerRun = (server: string): string => `own-${server}`;

const OURS = 'ours';
const PEER = 'node-redlock';
/** A command a master counted fewer times a cycle is left out: the clients' and the bench's occasional reads. */
const SHOWN_CALLS = 0.05;

/** The stored runs per server, in lab/servers.ts's order. */
function serverRuns(resultsDir: string): { readonly name: string; readonly run: OwnRunRecord }[] {
  return Object.keys(SERVERS).flatMap((name) => {
    const path = `${resultsDir}${ownServerRun(name)}.json`;
    return existsSync(path) ? [{ name, run: JSON.parse(readFileSync(path, 'utf8')) as OwnRunRecord }] : [];
  });
}

const ratioOf = (run: OwnRunRecord, metric: Metric): TargetResult =>
  judge(run.records, { kind: 'ratio', id: metric.name, scenario: 'S1', ours: OURS, peers: [PEER], metric, goal: '' }, run.plan.rounds);

const ratioText = (result: TargetResult): string => {
  const { min, max } = range(result.perRound);
  return `${fixed(result.value)}× (${fixed(min)}–${fixed(max)})`;
};

/** `label`'s commands per master per cycle, each the median over the rounds: `SET 1.0, EXISTS 2.0`. */
function commandsPerCycle(records: readonly OwnRecord[], label: string): string {
  const own = records.filter((record) => record.scenario === 'S1' && record.label === label && record.slice.hung === 0 && record.slice.cycles > 0);
  if (own.some((record) => record.server.commands === undefined)) return 'not recorded';
  const names = [...new Set(own.flatMap((record) => Object.keys(record.server.commands ?? {})))];
  const counted = names
    .map((name) => ({
      name,
      calls: median(own.map((record) => (record.server.commands?.[name]?.calls ?? 0) / record.slice.cycles / OWN_MASTERS)),
    }))
    .filter(({ calls }) => calls >= SHOWN_CALLS)
    .sort((a, b) => b.calls - a.calls || a.name.localeCompare(b.name));
  return counted.map(({ name, calls }) => `${name.toUpperCase()} ${fixed(calls, 1)}`).join(', ') || 'none';
}

/** docs/benchmarks.md's generated section: per server, the plain cycle's cost to the masters, ours against node-redlock. */
export function serversSection(resultsDir: string): string {
  const runs = serverRuns(resultsDir);
  const peerName = runs.flatMap(({ run }) => run.contenders.filter((contender) => contender.label === PEER).map((contender) => contender.name)).find(Boolean) ?? PEER;
  const rows = runs.map(({ name, run }) => {
    const target = ownTargets(run.rttMs, run.server?.version).find((candidate) => candidate.id === NATIVE_COMMAND_TARGET);
    const command = ratioOf(run, metrics.serverCommandsOnce);
    const goal = !target ? '—' : Number.isFinite(command.value) ? `${target.goal} ${meets(command.value, target.goal) ? 'PASS' : 'MISS'}` : `${target.goal} not measured`;
    const server = `${run.server?.version ?? 'unrecorded'} (${name})`;
    const when = `${run.date.slice(0, 10)}${run.commit ? `, commit ${run.commit}` : ''}, ${run.plan.rounds} rounds`;
    const microseconds = `${fixed(median(command.ours), 1)} vs ${fixed(median(command.peer), 1)}`;
    return {
      cost: `| ${server} | ${when} | ${microseconds} | ${ratioText(command)} | ${goal} | ${ratioText(ratioOf(run, metrics.serverCommands))} | ` +
        `${ratioText(ratioOf(run, metrics.p50))} | ${ratioText(ratioOf(run, metrics.cpu))} |`,
      commands: `| ${server} | ${commandsPerCycle(run.records, OURS)} | ${commandsPerCycle(run.records, PEER)} |`,
    };
  });
  const body = rows.length
    ? [
        `S1 on each server: ours on node-redis URLs against ${peerName}, each alone in a process of its own, ` +
          `${OWN_MASTERS} local masters of that server (\`npm run bench:own -- --only S1 --rounds N --server <name>\`, ` +
          'its whole output in bench/results/own-<name>.md). Each figure is the median over the rounds, each ratio the median of the ' +
          'per-round ratios (their range in brackets). The masters\' command time is INFO commandstats usec summed over the masters, per cycle, ' +
          'a script\'s commands counted once (in the script\'s time; commandstats also lists them on their own); "as listed" sums every ' +
          'line of commandstats, a script\'s commands twice, as issue 37\'s target reads it.',
        '',
        `| server | run | masters' command time per cycle, ours vs ${PEER} (µs) | ours ÷ ${PEER} (range) | target | ` +
          `the same as listed, ours ÷ ${PEER} | p50, ours ÷ ${PEER} | process CPU per cycle, ours ÷ ${PEER} |`,
        '|---|---|---:|---:|---|---:|---:|---:|',
        ...rows.map((row) => row.cost),
        '',
        `The commands each master counted per cycle (INFO commandstats calls ÷ cycles ÷ ${OWN_MASTERS} masters, the median over the rounds; ` +
          `fewer than ${SHOWN_CALLS} a cycle left out):`,
        '',
        `| server | ours | ${PEER} |`,
        '|---|---|---|',
        ...rows.map((row) => row.commands),
      ]
    : ['No run per server is stored yet: `npm run bench:own -- --only S1 --server <name>` writes one.'];
  return [
    BENCH_SERVERS_MARKERS.start,
    '<!-- generated by bench/readme.ts from bench/results/own-<server>.json: edit those, not this -->',
    '',
    ...body,
    BENCH_SERVERS_MARKERS.end,
  ].join('\n');
}
