/**
 * `npm run bench:own`'s figures: every contender's slice in every round, with what the masters
 * counted over it, turned into per-contender medians, per-round ratios of ours to a peer, and the
 * Targets block (bench/targets.ts's, each line with ours, the peer's figure, the judged value).
 * bench/readme.ts makes the README's rows from the same stored records.
 */
import { commandUsOnce, type MasterReading } from './master-stats.js';
import type { OwnSlice } from './own-slice.js';
import { fixed } from './report.js';
import { median, range, ratiosPerRound } from './rounds.js';
import { meets, S2_WORKERS, type Measure } from './targets.js';

/** One contender's slice of one round, and the masters' counters over it (all masters summed). */
export interface OwnRecord {
  /** 'S1', 'S2 64 workers', 'S2 256 workers', 'S3', 'S6'. */
  readonly scenario: string;
  readonly round: number;
  readonly label: string;
  readonly slice: OwnSlice;
  readonly server: MasterReading;
}

/** What a stored own-process run holds that its figures are made from (older records lack `rttMs` and `server`). */
export interface OwnStored {
  readonly plan: { readonly rounds: number };
  readonly records: readonly OwnRecord[];
  /** One round trip to a master (PING p50), ms: the hot key's hand-off unit. */
  readonly rttMs?: number;
  readonly server?: OwnServer;
}

/** The server the masters ran: its version as their INFO said (`Redis 8.6.3`), and its name in lab/servers.ts where `--server` named one. */
export interface OwnServer {
  readonly name?: string;
  readonly version: string;
}

/** Whether `version` (OwnServer's) has a native compare-and-delete, which the plain cycle uses: Redis 8.4+ (DELEX), Valkey 9+ (DELIFEQ). */
function nativeCompareAndDelete(version: string | undefined): boolean {
  const [, server, major, minor] = /^(Redis|Valkey) (\d+)\.(\d+)/.exec(version ?? '') ?? [];
  if (server === 'Valkey') return Number(major) >= 9;
  return Number(major) > 8 || (Number(major) === 8 && Number(minor) >= 4);
}

/** A per-cycle, per-second or per-slice figure of one record. */
export interface Metric {
  readonly name: string;
  readonly unit: string;
  readonly digits: number;
  readonly lowerIsBetter: boolean;
  of(record: OwnRecord): number;
}

const perCycle = (value: number, record: OwnRecord): number => (record.slice.cycles > 0 ? value / record.slice.cycles : Number.NaN);
const hotKey = (record: OwnRecord, figure: (hot: NonNullable<OwnSlice['hotKey']>) => number | null): number => {
  const hot = record.slice.hotKey;
  return hot ? (figure(hot) ?? Number.NaN) : Number.NaN;
};
export const metrics = {
  p50: { name: 'p50', unit: 'ms', digits: 3, lowerIsBetter: true, of: (record) => record.slice.p50Ms ?? Number.NaN },
  p99: { name: 'p99', unit: 'ms', digits: 3, lowerIsBetter: true, of: (record) => record.slice.p99Ms ?? Number.NaN },
  opsPerSecond: {
    name: 'throughput', unit: 'ops/s', digits: 0, lowerIsBetter: false,
    of: (record) => (record.slice.measuredMs > 0 ? (record.slice.cycles / record.slice.measuredMs) * 1000 : Number.NaN),
  },
  cpu: { name: 'process CPU per cycle', unit: 'µs', digits: 0, lowerIsBetter: true, of: (record) => perCycle(record.slice.cpuUs, record) },
  serverCpu: { name: 'server CPU per cycle (INFO cpu)', unit: 'µs', digits: 1, lowerIsBetter: true, of: (record) => perCycle(record.server.cpuUs, record) },
  serverCommands: {
    name: 'server command time per cycle (INFO commandstats)', unit: 'µs', digits: 1, lowerIsBetter: true,
    of: (record) => perCycle(record.server.commandUs, record),
  },
  serverCommandsOnce: {
    name: "server command time per cycle, a script's commands once", unit: 'µs', digits: 1, lowerIsBetter: true,
    of: (record) => perCycle(commandUsOnce(record.server), record),
  },
  scriptCalls: { name: 'script calls per cycle', unit: '', digits: 1, lowerIsBetter: true, of: (record) => perCycle(record.server.scriptCalls, record) },
  jain: { name: 'Jain', unit: '', digits: 3, lowerIsBetter: false, of: (record) => hotKey(record, (hot) => hot.jain) },
  handoff: { name: 'hand-off p50', unit: 'ms', digits: 2, lowerIsBetter: true, of: (record) => hotKey(record, (hot) => hot.handoffP50Ms) },
  maxWait: { name: 'longest wait', unit: 'ms', digits: 0, lowerIsBetter: true, of: (record) => hotKey(record, (hot) => hot.maxWaitMs) },
  giveUps: { name: 'gave up', unit: '', digits: 0, lowerIsBetter: true, of: (record) => record.slice.failures },
  cycles: { name: 'cycles', unit: '', digits: 0, lowerIsBetter: false, of: (record) => record.slice.cycles },
} satisfies Record<string, Metric>;

/** The hand-off in round trips of `rttMs`. */
function handoffRoundTrips(rttMs: number): Metric {
  return {
    name: `hand-off p50 in round trips (PING p50 ${fixed(rttMs, 3)} ms)`, unit: '', digits: 1, lowerIsBetter: true,
    of: (record) => metrics.handoff.of(record) / rttMs,
  };
}

/**
 * A target of the own-process mode: `ratio`, ours ÷ a peer (or the best of several, round by round)
 * on one figure, judged on the median ratio; `bound`, a figure of ours alone (the peers' shown
 * beside it), judged on its median over the rounds or, for `total`, its sum (a count of give-ups).
 */
export interface OwnTarget {
  readonly kind: 'ratio' | 'median' | 'total';
  readonly id: string;
  readonly scenario: string;
  readonly ours: string;
  readonly peers: readonly string[];
  readonly metric: Metric;
  /** How the best peer of a round is picked, where not by `metric` itself: the longest wait is the fastest peer's. */
  readonly rankBy?: Metric;
  /** "≤ 1.00×", "≥ 5×", "≤ 2.5"; empty for a figure to know. */
  readonly goal: string;
}

/** Issue 39's target: the masters' command time of the plain cycle, where the server has a compare-and-delete. */
export const NATIVE_COMMAND_TARGET = "S1 server command µs/cycle, a script's commands once, node-redis: ours ÷ node-redlock";

/** The peers of S2 and the hot key in this mode: each a lock library with retries (not the raw floor). */
const PEERS = ['node-redlock', 'redlock-universal', 'redis-semaphore'];
/** The hot-key scenarios of this mode: S3 in one process, S6 across processes. */
export const HOT_KEY_SCENARIOS = ['S3', 'S6'];

/**
 * The targets for the own-process mode (issues 28, 37 and 39); the hand-off ones only with a round
 * trip measured; issue 39's where the run's masters (`serverVersion`) have a compare-and-delete.
 */
export function ownTargets(rttMs = Number.NaN, serverVersion?: string): OwnTarget[] {
  const s1 = (id: string, ours: string, peer: string, metric: Metric, goal = '≤ 1.00×'): OwnTarget =>
    ({ kind: 'ratio', id, scenario: 'S1', ours, peers: [peer], metric, goal });
  // Issue 37: the masters' command time within 10 % of node-redlock's (a release also checks the
  // key's queue, one command more than its compare-and-delete).
  const commandGoal = '≤ 1.10×';
  // Issue 39: where the server has a compare-and-delete of its own, the plain cycle is native
  // commands, at most 0.7 of node-redlock's (Lua on every server), a script's commands counted once.
  const native = nativeCompareAndDelete(serverVersion)
    ? [
        s1(NATIVE_COMMAND_TARGET, 'ours', 'node-redlock', metrics.serverCommandsOnce, '≤ 0.70×'),
        s1(NATIVE_COMMAND_TARGET.replace('node-redis', 'ioredis'), 'ours (ioredis)', 'node-redlock', metrics.serverCommandsOnce, '≤ 0.70×'),
      ]
    : [];
  const hot = (scenario: string): OwnTarget[] => {
    const common = { scenario, ours: 'ours', peers: PEERS };
    return [
      { ...common, kind: 'ratio', id: `${scenario} throughput: ours ÷ best peer`, metric: metrics.opsPerSecond, goal: '≥ 1.2×' },
      // The best peer's longest wait: that of the peer with the most acquisitions per second (a peer
      // that gave up on its waiters would otherwise look best).
      {
        ...common, kind: 'ratio', id: `${scenario} longest wait: ours ÷ best peer`, metric: metrics.maxWait, rankBy: metrics.opsPerSecond, goal: '≤ 0.2×',
      },
      ...(Number.isFinite(rttMs)
        ? [{ ...common, kind: 'median' as const, id: `${scenario} hand-off p50, round trips`, metric: handoffRoundTrips(rttMs), goal: '≤ 2.5' }]
        : []),
      { ...common, kind: 'median', id: `${scenario} Jain`, metric: metrics.jain, goal: '≥ 0.99' },
      { ...common, kind: 'total', id: `${scenario} give-ups`, metric: metrics.giveUps, goal: '≤ 0' },
    ];
  };
  return [
    s1('S1 p50, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.p50),
    s1('S1 p50, node-redis: ours ÷ raw floor', 'ours', 'raw floor', metrics.p50),
    s1('S1 p50, node-redis: ours ÷ redlock-universal', 'ours', 'redlock-universal', metrics.p50),
    s1('S1 CPU/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.cpu),
    s1('S1 CPU/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.cpu),
    s1('S1 server CPU/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.serverCpu),
    s1('S1 server command µs/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.serverCommands, commandGoal),
    s1('S1 server CPU/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.serverCpu),
    s1('S1 server command µs/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.serverCommands, commandGoal),
    ...native,
    ...S2_WORKERS.map((workers): OwnTarget => ({
      kind: 'ratio',
      id: `S2 @ ${workers}: ours ÷ best peer`,
      scenario: `S2 ${workers} workers`,
      ours: 'ours',
      peers: PEERS,
      metric: metrics.opsPerSecond,
      goal: '≥ 5×',
    })),
    ...HOT_KEY_SCENARIOS.flatMap(hot),
  ];
}

export interface TargetResult {
  readonly target: OwnTarget;
  /** Per round: ours, the peer compared (the best that round, of several), and its label. */
  readonly ours: readonly number[];
  readonly peer: readonly number[];
  readonly peerLabels: readonly (string | undefined)[];
  /** Per round: the ratio (a `ratio` target) or ours' figure (a bound). */
  readonly perRound: readonly number[];
  /** What is judged: the median of `perRound`, or its sum for a `total`. */
  readonly value: number;
}

/** A figure of `label` in `scenario`'s round; undefined where it did not run, hung or measured nothing. */
function figureOf(records: readonly OwnRecord[], scenario: string, label: string, round: number, metric: Metric): number | undefined {
  const record = records.find((candidate) => candidate.scenario === scenario && candidate.label === label && candidate.round === round);
  const figure = record && record.slice.hung === 0 ? metric.of(record) : Number.NaN;
  return Number.isFinite(figure) ? figure : undefined;
}

export function judge(records: readonly OwnRecord[], target: OwnTarget, rounds: number): TargetResult {
  const { metric, scenario } = target;
  const rankBy = target.rankBy ?? metric;
  const ours = Array.from({ length: rounds }, (_, round) => figureOf(records, scenario, target.ours, round, metric));
  const best = Array.from({ length: rounds }, (_, round) =>
    target.peers
      .map((label) => ({ label, figure: figureOf(records, scenario, label, round, metric), rank: figureOf(records, scenario, label, round, rankBy) }))
      .filter((peer): peer is { label: string; figure: number; rank: number } => peer.figure !== undefined && peer.rank !== undefined)
      .sort((a, b) => (rankBy.lowerIsBetter ? a.rank - b.rank : b.rank - a.rank))[0],
  );
  const peer = best.map((candidate) => candidate?.figure);
  const perRound = target.kind === 'ratio' ? ratiosPerRound(ours, peer) : ours.map((figure) => figure ?? Number.NaN);
  const measured = perRound.filter(Number.isFinite);
  return {
    target,
    ours: ours.map((figure) => figure ?? Number.NaN),
    peer: peer.map((figure) => figure ?? Number.NaN),
    peerLabels: best.map((candidate) => candidate?.label),
    perRound,
    value: target.kind === 'total' ? (measured.length ? measured.reduce((a, b) => a + b, 0) : Number.NaN) : median(perRound),
  };
}

/** Every target whose scenario has records, judged. */
export function ownResults(stored: OwnStored): TargetResult[] {
  return ownTargets(stored.rttMs, stored.server?.version)
    .filter((target) => stored.records.some((record) => record.scenario === target.scenario))
    .map((target) => judge(stored.records, target, stored.plan.rounds));
}

const spanText = (values: readonly number[], digits: number): string => {
  const { min, max } = range(values);
  return `${fixed(median(values), digits)} (${fixed(min, digits)}–${fixed(max, digits)})`;
};

/** The sum of `label`'s figure over the rounds (a `total` target's peers). */
const totalOf = (records: readonly OwnRecord[], target: OwnTarget, label: string): number =>
  records
    .filter((record) => record.scenario === target.scenario && record.label === label && record.slice.hung === 0)
    .reduce((sum, record) => sum + target.metric.of(record), 0);

/** The Targets block: per line ours and the peer (medians over the rounds, or totals), the judged value, its range, PASS/MISS. */
export function ownMeasures(results: readonly TargetResult[], records: readonly OwnRecord[] = []): Measure[] {
  return results.map(({ target, ours, peer, peerLabels, perRound, value }) => {
    const { metric } = target;
    const { min, max } = range(perRound);
    const rounds = perRound.filter(Number.isFinite).length;
    const named = [...new Set(peerLabels.filter((label): label is string => label !== undefined))];
    const peerName = target.peers.length > 1
      ? `the best peer's (${target.rankBy ? `by ${target.rankBy.name}: ` : ''}${named.join(', ') || 'none'})`
      : `${target.peers[0]}'s`;
    const unit = metric.unit ? ` ${metric.unit}` : '';
    const perRoundText = target.kind === 'ratio' ? `per-round ratio ${fixed(min)}–${fixed(max)}×` : `per round ${fixed(min, metric.digits)}–${fixed(max, metric.digits)}`;
    const text = target.kind === 'total'
      ? `${target.id}: ${metric.name} ${fixed(value, 0)} of ${fixed(value + totalOf(records, { ...target, metric: metrics.cycles }, target.ours), 0)} ` +
        `acquisitions (${target.peers.map((label) => `${label} ${fixed(totalOf(records, target, label), 0)}`).join(', ')}; totals over ${rounds} rounds)`
      : `${target.id}: ${metric.name} ${fixed(median(ours), metric.digits)} vs ${peerName} ${fixed(median(peer), metric.digits)}${unit} ` +
        `(medians over ${rounds} rounds; ${perRoundText})`;
    return {
      id: target.id,
      value,
      goal: target.goal,
      text,
      ...(target.kind === 'total' ? { unit: 'count' as const } : {}),
      ...(target.goal && Number.isFinite(value) ? { met: meets(value, target.goal) } : {}),
    };
  });
}

/** A stored run's Targets, from its records with the current targets. */
export function ownMeasuresOf(stored: OwnStored): Measure[] {
  return ownMeasures(ownResults(stored), stored.records);
}

/** Per contender of one scenario: the median of each figure over the rounds, and its range. */
export function ownTable(title: string, scenario: string, labels: readonly string[], names: ReadonlyMap<string, string>, records: readonly OwnRecord[], rttMs: number): string {
  const hot = HOT_KEY_SCENARIOS.includes(scenario);
  const columns: Metric[] = scenario === 'S1'
    ? [metrics.p50, metrics.p99, metrics.cpu, metrics.serverCpu, metrics.serverCommands, metrics.serverCommandsOnce, metrics.scriptCalls]
    : hot
      ? [metrics.opsPerSecond, metrics.jain, metrics.handoff, handoffRoundTrips(rttMs), metrics.maxWait, metrics.giveUps, metrics.p50, metrics.cpu, metrics.serverCpu, metrics.scriptCalls]
      : [metrics.opsPerSecond, metrics.p50, metrics.p99, metrics.cpu, metrics.serverCpu, metrics.serverCommands, metrics.scriptCalls];
  const columnName = (metric: Metric): string => (metric === metrics.p50 && hot ? 'cycle p50' : metric.name.replace(/ \(PING.*/, ''));
  const header = `| library (own process) | rounds | ${columns.map((metric) => `${columnName(metric)}${metric.unit ? ` ${metric.unit}` : ''}`).join(' | ')} | notes |`;
  const rule = `|---|---:|${columns.map(() => '---:').join('|')}|---|`;
  const lines = labels.flatMap((label) => {
    const own = records.filter((record) => record.scenario === scenario && record.label === label);
    if (!own.length) return [];
    const measured = own.filter((record) => record.slice.hung === 0 && record.slice.cycles > 0);
    const failures = own.reduce((sum, record) => sum + record.slice.failures, 0);
    const hung = own.some((record) => record.slice.hung > 0);
    const notes = [hung ? '**hangs**: a call missed its deadline; not run again' : '', failures ? `${failures} ${hot ? 'gave up' : 'failed'}` : '']
      .filter(Boolean).join(', ');
    const cells = columns.map((metric) => spanText(measured.map((record) => metric.of(record)), metric.digits));
    return [`| ${names.get(label) ?? label} | ${measured.length} | ${cells.join(' | ')} | ${notes} |`];
  });
  const footnote = hot ? `\nHand-off in round trips of ${fixed(rttMs, 3)} ms (PING p50). Gave up: acquisitions the library gave up on, per round.\n` : '';
  return `### ${title}\n\nEach cell: the median over the rounds (the range in brackets).\n\n${header}\n${rule}\n${lines.join('\n')}\n${footnote}`;
}

/** Every target's figure round by round: the ratio, or ours' own figure for a bound; its median (a total's sum) and range. */
export function roundsTable(results: readonly TargetResult[], rounds: number): string {
  const header = `| target | ${Array.from({ length: rounds }, (_, round) => `round ${round + 1}`).join(' | ')} | judged | range |`;
  const rule = `|---|${Array.from({ length: rounds }, () => '---:').join('|')}|---:|---:|`;
  const lines = results.map(({ target, perRound, value }) => {
    const shown = (figure: number): string => (target.kind === 'ratio' ? `${fixed(figure)}×` : fixed(figure, target.metric.digits));
    const { min, max } = range(perRound);
    const judged = target.kind === 'total' ? `${shown(value)} in all` : `${shown(value)} median`;
    return `| ${target.id} | ${perRound.map(shown).join(' | ')} | ${judged} | ${shown(min)}–${shown(max)} |`;
  });
  return '### Per round\n\nEach round runs every contender once, one at a time, in a rotated order; a ratio compares two slices of the same round, ' +
    `a bound (hand-off, Jain, give-ups) is ours' own figure of the round.\n\n${header}\n${rule}\n${lines.join('\n')}\n`;
}
