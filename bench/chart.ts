/**
 * The run's SVG chart: one panel per scenario, each a horizontal bar chart with its own axis, the
 * figure that scenario is about (latency percentiles where it is about latency, acquisitions per
 * second where it is about throughput, with give-ups and Jain written beside S6's bars).
 * Layout is computed from the rows: every panel is as tall as its bars, labels sit left of the
 * bars, values right of them in a margin kept free, axis labels under the panel.
 */
import { giveUpFraction, type Row } from './report.js';

interface Bar {
  readonly series: string;
  readonly value: number;
  /** Written right of the bar. */
  readonly text: string;
}
interface Group {
  readonly label: string;
  readonly bars: readonly Bar[];
}
interface Panel {
  readonly title: string;
  readonly axis: string;
  readonly log: boolean;
  readonly series: readonly string[];
  readonly groups: readonly Group[];
}

const WIDTH = 1000;
const LEFT = 190;
/** Free space right of the longest bar for its value. */
const VALUE_MARGIN = 250;
const BAR_AREA = WIDTH - LEFT - VALUE_MARGIN;
const BAR_HEIGHT = 11;
const GROUP_GAP = 7;
const COLORS = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2', '#b279a2'];

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const ms = (value: number): string => (value >= 10 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(2));
const waitMs = (value: number | undefined): string => (value === undefined || !Number.isFinite(value) ? '—' : ms(value));
const gaveUp = (row: Row): string => (row.failures > 0 ? `, gave up ${row.failures}` : '');
const perSecond = (row: Row): string => (row.hung > 0 ? 'hung' : `${Math.round(row.opsPerSecond)}/s`);

/** Latency percentiles of `scenario`, one group per library. */
function latencyPanel(rows: readonly Row[], scenario: string, title: string, percentiles: ReadonlyArray<readonly [string, keyof Row]>): Panel {
  return {
    title,
    axis: 'ms per acquire + release (log scale)',
    log: true,
    series: percentiles.map(([name]) => name),
    groups: rows
      .filter((row) => row.scenario === scenario)
      .map((row) => ({
        label: row.label,
        bars: percentiles.map(([name, key]) => {
          const value = row[key] as number;
          return { series: name, value, text: row.hung > 0 ? 'hung' : `${name} ${ms(value)}` };
        }),
      })),
  };
}

/** One figure per library for each of `scenarios` (a series each). */
function perLibraryPanel(
  rows: readonly Row[],
  scenarios: ReadonlyArray<readonly [scenario: string, series: string]>,
  title: string,
  axis: string,
  log: boolean,
  bar: (row: Row, series: string) => Bar,
): Panel {
  const labels = [...new Set(rows.filter((row) => scenarios.some(([id]) => id === row.scenario)).map((row) => row.label))];
  return {
    title,
    axis,
    log,
    series: scenarios.map(([, series]) => series),
    groups: labels.map((label) => ({
      label,
      bars: scenarios.flatMap(([id, series]) => {
        const row = rows.find((candidate) => candidate.scenario === id && candidate.label === label);
        return row ? [bar(row, series)] : [];
      }),
    })),
  };
}

function panels(rows: readonly Row[]): Panel[] {
  const throughput = (row: Row, series: string): Bar => ({ series, value: row.opsPerSecond, text: `${series}: ${perSecond(row)}` });
  const p50 = (row: Row, series: string): Bar => ({ series, value: row.p50Ms, text: row.hung > 0 ? `${series}: hung` : `${series}: ${ms(row.p50Ms)} ms` });
  const s2 = [...new Set(rows.filter((row) => row.scenario.startsWith('S2 ')).map((row) => row.scenario))];
  const list: Panel[] = [
    latencyPanel(rows, 'S1', 'S1 — sequential acquire + release, 1 worker: latency', [['p50', 'p50Ms'], ['p90', 'p90Ms'], ['p99', 'p99Ms'], ['p99.9', 'p999Ms']]),
    perLibraryPanel(rows, s2.map((id) => [id, id.replace('S2 ', '')] as const), 'S2 — concurrent workers on distinct keys: throughput', 'acquire + release per second', false, throughput),
    perLibraryPanel(rows, [['S3', '16 workers']], 'S3 — hot key, 16 workers in one process, 1 ms section: throughput', 'acquisitions per second', false, (row, series) => ({
      series,
      value: row.opsPerSecond,
      text: `${perSecond(row)}, Jain ${row.jain?.toFixed(2) ?? '—'}, hand-off ${ms(row.handoffP50Ms ?? Number.NaN)} ms`,
    })),
    latencyPanel(rows, 'S4 S1', 'S4 — one master blackholed, S1: latency', [['p50', 'p50Ms'], ['p99', 'p99Ms']]),
    perLibraryPanel(rows, [['S4 S2 64 workers', '64 workers']], 'S4 — one master blackholed, S2 at 64 workers: throughput', 'acquire + release per second', false, throughput),
    perLibraryPanel(rows, [['S5 base', 'base'], ['S5', '+20 ms']], 'S5 — master 0 behind a proxy, nothing added (base) and +20 ms: p50', 'ms per acquire + release, p50 (log scale)', true, p50),
    perLibraryPanel(rows, [['S6', '4 × 4 workers']], 'S6 — hot key across 4 processes × 4 workers, defaults: throughput', 'acquisitions per second', false, (row, series) => ({
      series,
      value: row.opsPerSecond,
      text: `${perSecond(row)}, gave up ${row.failures} (${(giveUpFraction(row) * 100).toFixed(1)} %), Jain ${row.jain?.toFixed(2) ?? '—'}`,
    })),
    perLibraryPanel(rows, [['S7', '64 workers']], 'S7 — S2 at 64 workers: 3 standalone voters vs 3 cluster voters', 'acquire + release per second', false, throughput),
    perLibraryPanel(rows, [['S8', '16 workers']], 'S8 — semaphore, limit 4, 16 workers in one process, 1 ms section, defaults: throughput', 'acquisitions per second', false, (row, series) => ({
      series,
      value: row.opsPerSecond,
      text: `${perSecond(row)}, p99 wait ${waitMs(row.waitP99Ms)} ms, max held ${row.maxHolders ?? '—'}${gaveUp(row)}`,
    })),
    perLibraryPanel(rows, [['S9', '16 workers']], 'S9 — read-write, 16 workers, 90 % reads, 1 ms section, defaults (mutex: every access exclusive): throughput', 'holds per second', false, (row, series) => ({
      series,
      value: row.opsPerSecond,
      text: `${perSecond(row)}, p99 wait ${waitMs(row.waitP99Ms)} ms, max readers ${row.maxReaders ?? '—'}${gaveUp(row)}`,
    })),
  ];
  return list.filter((panel) => panel.groups.some((group) => group.bars.length > 0));
}

/** Axis ticks: 1-2-5 steps on a log scale, about five round steps on a linear one. */
function ticks(min: number, max: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let decade = Math.floor(Math.log10(min)); decade <= Math.ceil(Math.log10(max)); decade++) {
      for (const step of [1, 2, 5]) {
        const tick = step * 10 ** decade;
        if (tick >= min && tick <= max) out.push(Number(tick.toPrecision(3)));
      }
    }
    return out;
  }
  const rough = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? rough;
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step);
}

const tickText = (value: number): string => (value >= 1000 ? `${value / 1000}k` : String(value));

function renderPanel(panel: Panel, top: number, parts: string[]): number {
  const text = (x: number, y: number, content: string, extra = ''): void => {
    parts.push(`<text x="${x}" y="${y}" ${extra}>${escape(content)}</text>`);
  };
  const values = panel.groups.flatMap((group) => group.bars.map((bar) => bar.value)).filter((value) => Number.isFinite(value) && value > 0);
  const max = Math.max(1e-3, ...values) * 1.05;
  const min = panel.log ? 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...values, max)))) : 0;
  const x = panel.log
    ? (value: number): number => LEFT + ((Math.log10(Math.max(value, min)) - Math.log10(min)) / (Math.log10(max) - Math.log10(min))) * BAR_AREA
    : (value: number): number => LEFT + (value / max) * BAR_AREA;

  text(20, top + 14, panel.title, 'font-weight="bold" font-size="13"');
  // Legend under the title when there is more than one series.
  let legendX = LEFT;
  if (panel.series.length > 1) {
    panel.series.forEach((series, i) => {
      parts.push(`<rect x="${legendX}" y="${top + 22}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/>`);
      text(legendX + 14, top + 31, series, 'font-size="11"');
      legendX += 24 + series.length * 7;
    });
  }
  const plotTop = top + (panel.series.length > 1 ? 40 : 26);
  let y = plotTop;
  const bands: Array<{ group: Group; y: number }> = [];
  for (const group of panel.groups) {
    bands.push({ group, y });
    y += Math.max(1, group.bars.length) * BAR_HEIGHT + GROUP_GAP;
  }
  const plotBottom = y - GROUP_GAP + 4;
  for (const tick of ticks(min, max, panel.log)) {
    parts.push(`<line x1="${x(tick)}" x2="${x(tick)}" y1="${plotTop - 4}" y2="${plotBottom}" stroke="#e3e3e3"/>`);
    text(x(tick), plotBottom + 13, tickText(tick), 'text-anchor="middle" font-size="10" fill="#444"');
  }
  parts.push(`<line x1="${LEFT}" x2="${LEFT}" y1="${plotTop - 4}" y2="${plotBottom}" stroke="#888"/>`);
  parts.push(`<line x1="${LEFT}" x2="${LEFT + BAR_AREA}" y1="${plotBottom}" y2="${plotBottom}" stroke="#888"/>`);
  text(LEFT + BAR_AREA / 2, plotBottom + 28, panel.axis, 'text-anchor="middle" font-size="11" fill="#444"');
  for (const { group, y: y0 } of bands) {
    const height = Math.max(1, group.bars.length) * BAR_HEIGHT;
    text(LEFT - 8, y0 + height / 2 + 4, group.label, 'text-anchor="end"');
    group.bars.forEach((bar, j) => {
      const barY = y0 + j * BAR_HEIGHT;
      const color = COLORS[panel.series.indexOf(bar.series) % COLORS.length];
      const end = Number.isFinite(bar.value) && bar.value > 0 ? x(bar.value) : LEFT;
      parts.push(`<rect x="${LEFT}" y="${barY}" width="${Math.max(1, end - LEFT)}" height="${BAR_HEIGHT - 2}" fill="${color}"><title>${escape(`${group.label} ${bar.text}`)}</title></rect>`);
      text(end + 4, barY + BAR_HEIGHT - 3, bar.text, 'font-size="10"');
    });
  }
  return plotBottom + 40 - top;
}

export function svgChart(rows: readonly Row[], subtitle: string): string {
  const parts: string[] = [];
  let top = 30;
  for (const panel of panels(rows)) top += renderPanel(panel, top, parts) + 14;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top}" viewBox="0 0 ${WIDTH} ${top}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${WIDTH - 20}" y="18" text-anchor="end" font-size="10" fill="#555">${escape(subtitle)}</text>
${parts.join('\n')}
</svg>
`;
}
