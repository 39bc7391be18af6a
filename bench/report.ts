/**
 * Turning tallies into the markdown tables, the JSON record and the SVG chart.
 */
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
}

export function rowOf(scenario: string, contender: string, label: string, tally: Tally, hotKey: boolean): Row {
  const ms = (percentile: number): number => (tally.cycles ? tally.latencyUs.getValueAtPercentile(percentile) / 1000 : Number.NaN);
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
  };
}

const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

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

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Two panels: S1 latency percentiles per library (grouped bars, log scale) and S2 throughput at 64
 * and 256 workers (grouped bars).
 */
export function svgChart(rows: readonly Row[], subtitle: string): string {
  const width = 900;
  const panelHeight = 300;
  const left = 170;
  const barArea = width - left - 150; // room for the value labels right of the longest bar
  const colors = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2'];
  const parts: string[] = [];
  const text = (x: number, y: number, content: string, extra = ''): void => {
    parts.push(`<text x="${x}" y="${y}" ${extra}>${escape(content)}</text>`);
  };

  // Panel 1: S1 latency, log10 scale from 0.1 ms to the largest p99.9.
  const s1 = rows.filter((row) => row.scenario === 'S1');
  const percentiles: Array<[string, keyof Row]> = [
    ['p50', 'p50Ms'],
    ['p90', 'p90Ms'],
    ['p99', 'p99Ms'],
    ['p99.9', 'p999Ms'],
  ];
  const maxLatency = Math.max(1, ...s1.flatMap((row) => percentiles.map(([, key]) => row[key] as number)).filter(Number.isFinite));
  const logMin = Math.log10(0.1);
  const logMax = Math.log10(maxLatency * 1.2);
  const xOf = (ms: number): number => left + ((Math.log10(Math.max(ms, 0.1)) - logMin) / (logMax - logMin)) * barArea;
  text(20, 30, 'S1 — sequential acquire + release, latency (ms, log scale)', 'font-weight="bold"');
  const groupHeight = (panelHeight - 60) / Math.max(1, s1.length);
  s1.forEach((row, i) => {
    const y0 = 50 + i * groupHeight;
    text(left - 10, y0 + groupHeight / 2 + 4, row.label, 'text-anchor="end"');
    percentiles.forEach(([name, key], j) => {
      const value = row[key] as number;
      if (!Number.isFinite(value)) return;
      const barHeight = (groupHeight - 8) / percentiles.length;
      const y = y0 + j * barHeight;
      parts.push(`<rect x="${left}" y="${y}" width="${Math.max(1, xOf(value) - left)}" height="${barHeight - 1}" fill="${colors[j]}"><title>${escape(`${row.label} ${name}: ${value.toFixed(3)} ms`)}</title></rect>`);
      text(xOf(value) + 4, y + barHeight - 2, `${name} ${value.toFixed(2)}`, 'font-size="9"');
    });
  });
  for (const tick of [0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000].filter((t) => Math.log10(t) <= logMax)) {
    parts.push(`<line x1="${xOf(tick)}" x2="${xOf(tick)}" y1="45" y2="${panelHeight - 5}" stroke="#ddd"/>`);
    text(xOf(tick), panelHeight + 8, String(tick), 'text-anchor="middle" font-size="10"');
  }

  // Panel 2: S2 throughput.
  const top = panelHeight + 40;
  const s2 = rows.filter((row) => row.scenario.startsWith('S2'));
  const sizes = [...new Set(s2.map((row) => row.scenario))];
  const libraries = [...new Set(s2.map((row) => row.label))];
  const maxOps = Math.max(1, ...s2.map((row) => row.opsPerSecond));
  text(20, top, 'S2 — concurrent workers on distinct keys, acquire + release per second', 'font-weight="bold"');
  const libHeight = (panelHeight - 60) / Math.max(1, libraries.length);
  libraries.forEach((label, i) => {
    const y0 = top + 20 + i * libHeight;
    text(left - 10, y0 + libHeight / 2 + 4, label, 'text-anchor="end"');
    sizes.forEach((size, j) => {
      const row = s2.find((r) => r.label === label && r.scenario === size);
      if (!row) return;
      const barHeight = (libHeight - 8) / sizes.length;
      const y = y0 + j * barHeight;
      const barWidth = (row.opsPerSecond / maxOps) * barArea;
      parts.push(`<rect x="${left}" y="${y}" width="${Math.max(1, barWidth)}" height="${barHeight - 1}" fill="${colors[j]}"/>`);
      const what = row.hung > 0 ? 'hung' : `${row.opsPerSecond.toFixed(0)}/s`;
      text(left + barWidth + 4, y + barHeight - 2, `${size.replace('S2 ', '')}: ${what}`, 'font-size="10"');
    });
  });
  const height = top + panelHeight + 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${width - 20}" y="18" text-anchor="end" font-size="10" fill="#555">${escape(subtitle)}</text>
${parts.join('\n')}
</svg>
`;
}
