/**
 * `npm run bench:own`'s figures: every contender's slice in every round, with what the masters
 * counted over it, turned into per-contender medians, per-round ratios of ours to a peer, and the
 * Targets block (bench/targets.ts's, each line with ours, the peer's bound, the median ratio).
 */
import type { MasterReading } from './master-stats.js';
import type { OwnSlice } from './own-process.js';
import { fixed } from './report.js';
import { median, range, ratiosPerRound } from './rounds.js';
import { meets, type Measure } from './targets.js';

/** One contender's slice of one round, and the masters' counters over it (all masters summed). */
export interface OwnRecord {
  /** 'S1', 'S2 64 workers', 'S2 256 workers'. */
  readonly scenario: string;
  readonly round: number;
  readonly label: string;
  readonly slice: OwnSlice;
  readonly server: MasterReading;
}

/** A per-cycle or per-second figure of one record. */
interface Metric {
  readonly name: string;
  readonly unit: string;
  readonly digits: number;
  readonly lowerIsBetter: boolean;
  of(record: OwnRecord): number;
}

const perCycle = (value: number, record: OwnRecord): number => (record.slice.cycles > 0 ? value / record.slice.cycles : Number.NaN);
const metrics = {
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
  scriptCalls: { name: 'script calls per cycle', unit: '', digits: 1, lowerIsBetter: true, of: (record) => perCycle(record.server.scriptCalls, record) },
} satisfies Record<string, Metric>;

/** Ours against a peer (or the best of several, round by round) on one figure of one scenario. */
export interface Comparison {
  readonly id: string;
  readonly scenario: string;
  readonly ours: string;
  readonly peers: readonly string[];
  readonly metric: Metric;
  /** "≤ 1.00×", "≥ 5×"; empty for a figure to know. */
  readonly goal: string;
}

/** The issue's targets for the own-process mode (issue 28), on the rounds' records. */
export function ownComparisons(s2Workers: readonly number[]): Comparison[] {
  const s1 = (id: string, ours: string, peer: string, metric: Metric): Comparison => ({ id, scenario: 'S1', ours, peers: [peer], metric, goal: '≤ 1.00×' });
  return [
    s1('S1 p50, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.p50),
    s1('S1 p50, node-redis: ours ÷ raw floor', 'ours', 'raw floor', metrics.p50),
    s1('S1 p50, node-redis: ours ÷ redlock-universal', 'ours', 'redlock-universal', metrics.p50),
    s1('S1 CPU/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.cpu),
    s1('S1 CPU/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.cpu),
    s1('S1 server CPU/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.serverCpu),
    s1('S1 server command µs/cycle, ioredis: ours ÷ node-redlock', 'ours (ioredis)', 'node-redlock', metrics.serverCommands),
    s1('S1 server CPU/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.serverCpu),
    s1('S1 server command µs/cycle, node-redis: ours ÷ node-redlock', 'ours', 'node-redlock', metrics.serverCommands),
    ...s2Workers.map((workers): Comparison => ({
      id: `S2 @ ${workers}: ours ÷ best peer`,
      scenario: `S2 ${workers} workers`,
      ours: 'ours',
      peers: ['node-redlock', 'redlock-universal', 'redis-semaphore'],
      metric: metrics.opsPerSecond,
      goal: '≥ 5×',
    })),
  ];
}

export interface ComparisonResult {
  readonly comparison: Comparison;
  /** Per round: ours, the peer compared (the best that round, of several), and the ratio. */
  readonly ours: readonly number[];
  readonly peer: readonly number[];
  readonly peerLabels: readonly (string | undefined)[];
  readonly ratios: readonly number[];
}

export function compare(records: readonly OwnRecord[], comparison: Comparison, rounds: number): ComparisonResult {
  const { metric } = comparison;
  const value = (label: string, round: number): number | undefined => {
    const record = records.find((candidate) => candidate.scenario === comparison.scenario && candidate.label === label && candidate.round === round);
    const figure = record && record.slice.hung === 0 ? metric.of(record) : Number.NaN;
    return Number.isFinite(figure) ? figure : undefined;
  };
  const ours = Array.from({ length: rounds }, (_, round) => value(comparison.ours, round));
  const best = Array.from({ length: rounds }, (_, round) =>
    comparison.peers
      .map((label) => ({ label, figure: value(label, round) }))
      .filter((peer): peer is { label: string; figure: number } => peer.figure !== undefined)
      .sort((a, b) => (metric.lowerIsBetter ? a.figure - b.figure : b.figure - a.figure))[0],
  );
  const peer = best.map((candidate) => candidate?.figure);
  return {
    comparison,
    ours: ours.map((figure) => figure ?? Number.NaN),
    peer: peer.map((figure) => figure ?? Number.NaN),
    peerLabels: best.map((candidate) => candidate?.label),
    ratios: ratiosPerRound(ours, peer),
  };
}

const spanText = (values: readonly number[], digits: number): string => {
  const { min, max } = range(values);
  return `${fixed(median(values), digits)} (${fixed(min, digits)}–${fixed(max, digits)})`;
};

/** The Targets block: per line ours and the peer (medians over the rounds), the median ratio, its range, PASS/MISS. */
export function ownMeasures(results: readonly ComparisonResult[]): Measure[] {
  return results.map(({ comparison, ours, peer, peerLabels, ratios }) => {
    const { metric } = comparison;
    const value = median(ratios);
    const { min, max } = range(ratios);
    const named = [...new Set(peerLabels.filter((label): label is string => label !== undefined))];
    const peerName = comparison.peers.length > 1 ? `the best peer's (${named.join(', ') || 'none'})` : `${comparison.peers[0]}'s`;
    const unit = metric.unit ? ` ${metric.unit}` : '';
    const text = `${comparison.id}: ${metric.name} ${fixed(median(ours), metric.digits)} vs ${peerName} ${fixed(median(peer), metric.digits)}${unit} ` +
      `(medians over ${ratios.filter(Number.isFinite).length} rounds; per-round ratio ${fixed(min)}–${fixed(max)}×)`;
    return { id: comparison.id, value, goal: comparison.goal, text, ...(comparison.goal && Number.isFinite(value) ? { met: meets(value, comparison.goal) } : {}) };
  });
}

/** Per contender of one scenario: the median of each figure over the rounds, and its range. */
export function ownTable(title: string, scenario: string, labels: readonly string[], names: ReadonlyMap<string, string>, records: readonly OwnRecord[]): string {
  const columns: Metric[] = scenario === 'S1'
    ? [metrics.p50, metrics.p99, metrics.cpu, metrics.serverCpu, metrics.serverCommands, metrics.scriptCalls]
    : [metrics.opsPerSecond, metrics.p50, metrics.p99, metrics.cpu, metrics.serverCpu, metrics.serverCommands, metrics.scriptCalls];
  const header = `| library (own process) | rounds | ${columns.map((metric) => `${metric.name}${metric.unit ? ` ${metric.unit}` : ''}`).join(' | ')} | notes |`;
  const rule = `|---|---:|${columns.map(() => '---:').join('|')}|---|`;
  const lines = labels.map((label) => {
    const own = records.filter((record) => record.scenario === scenario && record.label === label);
    const measured = own.filter((record) => record.slice.hung === 0 && record.slice.cycles > 0);
    const failures = own.reduce((sum, record) => sum + record.slice.failures, 0);
    const hung = own.some((record) => record.slice.hung > 0);
    const notes = [hung ? '**hangs**: a call missed its deadline; not run again' : '', failures ? `${failures} failed` : ''].filter(Boolean).join(', ');
    const cells = columns.map((metric) => spanText(measured.map((record) => metric.of(record)), metric.digits));
    return `| ${names.get(label) ?? label} | ${measured.length} | ${cells.join(' | ')} | ${notes} |`;
  });
  return `### ${title}\n\nEach cell: the median over the rounds (the range in brackets).\n\n${header}\n${rule}\n${lines.join('\n')}\n`;
}

/** Every comparison's ratio round by round, its median and range. */
export function ratioTable(results: readonly ComparisonResult[], rounds: number): string {
  const header = `| ours ÷ peer | ${Array.from({ length: rounds }, (_, round) => `round ${round + 1}`).join(' | ')} | median | range |`;
  const rule = `|---|${Array.from({ length: rounds }, () => '---:').join('|')}|---:|---:|`;
  const lines = results.map(({ comparison, ratios }) => {
    const { min, max } = range(ratios);
    return `| ${comparison.id} | ${ratios.map((ratio) => `${fixed(ratio)}×`).join(' | ')} | ${fixed(median(ratios))}× | ${fixed(min)}–${fixed(max)}× |`;
  });
  return `### Ratios per round\n\nEach round runs every contender once, one at a time, in a rotated order; a ratio compares two slices of the same round.\n\n${header}\n${rule}\n${lines.join('\n')}\n`;
}
