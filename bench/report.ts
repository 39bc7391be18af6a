/**
 * Turning tallies into rows (the JSON record's) and the markdown tables; the chart is bench/chart.ts.
 */
import type { Histogram } from 'hdr-histogram-js';
import { jainIndex, type Tally } from './scenarios.js';

export interface Row {
  readonly scenario: string;
  readonly contender: string;
  readonly label: string;
  readonly opsPerSecond: number;
  readonly cycles: number;
  readonly failures: number;
  /** S6: releases that rejected (absent elsewhere). */
  readonly releaseFailures?: number;
  readonly hung: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly jain?: number;
  readonly maxWaitMs?: number;
  readonly handoffP50Ms?: number;
  /** S2: script calls each master ran per second of this contender's slices (EVALSHA and EVAL). */
  readonly scriptCallsPerSecond?: number;
  /** S8/S9: acquire waits (successful acquires), of write holds alone (S9), and the holders the bench counted. */
  readonly waitP50Ms?: number;
  readonly waitP99Ms?: number;
  readonly writeWaitP50Ms?: number;
  readonly writeWaitP99Ms?: number;
  readonly reads?: number;
  readonly writes?: number;
  readonly maxHolders?: number;
  readonly maxReaders?: number;
  readonly violations?: number;
}

export function rowOf(scenario: string, contender: string, label: string, tally: Tally, hotKey: boolean): Row {
  const ms = (percentile: number): number => (tally.cycles ? tally.latencyUs.getValueAtPercentile(percentile) / 1000 : Number.NaN);
  const { shared } = tally;
  const waitMs = (histogram: Histogram, percentile: number): number =>
    histogram.totalCount ? histogram.getValueAtPercentile(percentile) / 1000 : Number.NaN;
  return {
    scenario,
    contender,
    label,
    opsPerSecond: tally.measuredMs > 0 ? (tally.cycles / tally.measuredMs) * 1000 : 0,
    cycles: tally.cycles,
    failures: tally.failures,
    ...(tally.releaseFailures ? { releaseFailures: tally.releaseFailures } : {}),
    hung: tally.hung,
    p50Ms: ms(50),
    p90Ms: ms(90),
    p99Ms: ms(99),
    p999Ms: ms(99.9),
    ...(hotKey
      ? {
          jain: jainIndex(tally.perWorker),
          maxWaitMs: tally.maxWaitMs,
          handoffP50Ms: tally.handoffUs.totalCount ? tally.handoffUs.getValueAtPercentile(50) / 1000 : Number.NaN,
        }
      : {}),
    // S8/S9: the slice counted holders (sharedSlice).
    ...(shared.reads + shared.writes > 0
      ? {
          jain: jainIndex(tally.perWorker),
          maxWaitMs: tally.maxWaitMs,
          waitP50Ms: waitMs(shared.waitUs, 50),
          waitP99Ms: waitMs(shared.waitUs, 99),
          ...(shared.reads > 0 ? { writeWaitP50Ms: waitMs(shared.writeWaitUs, 50), writeWaitP99Ms: waitMs(shared.writeWaitUs, 99) } : {}),
          reads: shared.reads,
          writes: shared.writes,
          maxHolders: shared.maxHolders,
          maxReaders: shared.maxReaders,
          violations: shared.violations,
        }
      : {}),
  };
}

export const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

function note(row: Row, deadlineMs: number): string {
  if (row.hung > 0) return `**hangs**: no answer within ${deadlineMs} ms`;
  const releases = row.releaseFailures ? `${row.releaseFailures} releases failed` : '';
  return [row.failures > 0 ? `${row.failures} failed` : '', releases].filter(Boolean).join(', ');
}

/** S6's share of acquisitions that gave up (the acquire rejected). */
export const giveUpFraction = (row: Row): number => (row.cycles + row.failures > 0 ? row.failures / (row.cycles + row.failures) : 0);

/** S6: hot key across processes; `failures` are the acquisitions that gave up, Jain is over the processes. */
export function processesTable(title: string, rows: readonly Row[], deadlineMs: number, rttMs: number): string {
  const header = '| library | ops/s | gave up | gave up % | Jain (processes) | hand-off p50 ms (round trips) | max wait ms | cycle p50 ms | cycle p99 ms | notes |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const lines = rows.map((row) => {
    const handoff = row.handoffP50Ms ?? Number.NaN;
    const notes = row.hung > 0 ? `**hangs**: no answer within ${deadlineMs} ms` : row.releaseFailures ? `${row.releaseFailures} releases failed` : '';
    return `| ${row.contender} | ${fixed(row.opsPerSecond, 0)} | ${row.failures} | ${fixed(giveUpFraction(row) * 100, 1)} | ${fixed(row.jain ?? Number.NaN, 3)} | ${fixed(handoff)} (${fixed(handoff / rttMs, 1)}) | ${fixed(row.maxWaitMs ?? Number.NaN, 0)} | ${fixed(row.p50Ms)} | ${fixed(row.p99Ms)} | ${notes} |`;
  });
  return `### ${title}\n\n${header}\n${lines.join('\n')}\n`;
}

export function markdownTable(title: string, rows: readonly Row[], deadlineMs: number, rttMs: number): string {
  const hotKey = rows.some((row) => row.jain !== undefined);
  const header = hotKey
    ? '| library | ops/s | Jain | hand-off p50 ms (round trips) | max wait ms | cycle p50 ms | cycle p99 ms | notes |\n|---|---:|---:|---:|---:|---:|---:|---|'
    : '| library | ops/s | p50 ms | p90 ms | p99 ms | p99.9 ms | notes |\n|---|---:|---:|---:|---:|---:|---|';
  const lines = rows.map((row) =>
    hotKey
      ? `| ${row.contender} | ${fixed(row.opsPerSecond, 0)} | ${fixed(row.jain ?? Number.NaN, 3)} | ${fixed(row.handoffP50Ms ?? Number.NaN)} (${fixed((row.handoffP50Ms ?? Number.NaN) / rttMs, 1)}) | ${fixed(row.maxWaitMs ?? Number.NaN, 0)} | ${fixed(row.p50Ms)} | ${fixed(row.p99Ms)} | ${note(row, deadlineMs)} |`
      : `| ${row.contender} | ${fixed(row.opsPerSecond, 0)} | ${fixed(row.p50Ms, 3)} | ${fixed(row.p90Ms, 3)} | ${fixed(row.p99Ms, 3)} | ${fixed(row.p999Ms, 3)} | ${note(row, deadlineMs)} |`,
  );
  return `### ${title}\n\n${header}\n${lines.join('\n')}\n`;
}

/**
 * S8 (a semaphore) and S9 (read-write, where any row has reads): throughput, acquire waits, and what
 * the bench counted of the holders. Rates are per second of the slices; a read or write counts once released.
 * `footnote`: a line under the table (the settings each library ran with).
 */
export function sharedTable(title: string, rows: readonly Row[], deadlineMs: number, limit: number, footnote: string): string {
  const readWrite = rows.some((row) => (row.reads ?? 0) > 0);
  const perSecond = (row: Row, count: number | undefined): string =>
    row.cycles > 0 ? fixed((row.opsPerSecond * (count ?? 0)) / ((row.reads ?? 0) + (row.writes ?? 0)), 0) : '—';
  const header = readWrite
    ? '| library | holds/s | reads/s | writes/s | wait p50 ms | wait p99 ms | write wait p50 ms | write wait p99 ms | max wait ms | most readers at once | holds beside a writer | Jain (workers) | notes |\n' +
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|'
    : `| library | acquisitions/s | wait p50 ms | wait p99 ms | max wait ms | most held at once (limit ${limit}) | holds over the limit | Jain (workers) | cycle p50 ms | notes |\n` +
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const lines = rows.map((row) => {
    const common = `${fixed(row.waitP50Ms ?? Number.NaN)} | ${fixed(row.waitP99Ms ?? Number.NaN)}`;
    return readWrite
      ? `| ${row.contender} | ${fixed(row.opsPerSecond, 0)} | ${perSecond(row, row.reads)} | ${perSecond(row, row.writes)} | ${common} | ` +
          `${fixed(row.writeWaitP50Ms ?? Number.NaN)} | ${fixed(row.writeWaitP99Ms ?? Number.NaN)} | ${fixed(row.maxWaitMs ?? Number.NaN, 0)} | ` +
          `${row.maxReaders ?? '—'} | ${row.violations ?? '—'} | ${fixed(row.jain ?? Number.NaN, 3)} | ${note(row, deadlineMs)} |`
      : `| ${row.contender} | ${fixed(row.opsPerSecond, 0)} | ${common} | ${fixed(row.maxWaitMs ?? Number.NaN, 0)} | ${row.maxHolders ?? '—'} | ` +
          `${row.violations ?? '—'} | ${fixed(row.jain ?? Number.NaN, 3)} | ${fixed(row.p50Ms)} | ${note(row, deadlineMs)} |`;
  });
  return `### ${title}\n\n${header}\n${lines.join('\n')}\n\n${footnote}\n`;
}
