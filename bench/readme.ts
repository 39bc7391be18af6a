/**
 * The generated sections of the README and the docs, so no measured figure is typed by hand:
 * - docs/benchmarks.md, between `<!-- bench:start -->` and `<!-- bench:end -->`: the latest full
 *   own-process run's tables and Targets (bench/results/own-latest.md), then the latest full run's
 *   in-process ones (bench/results/latest.md, the secondary tables), the spread of both modes'
 *   targets over the last full runs (bench/results/runs/) and the latest `npm run bench:held`
 *   (bench/results/held.md);
 * - docs/benchmarks.md, between `<!-- bench-summary:start -->` and `<!-- bench-summary:end -->`: one
 *   table, per scenario ours against the best peer, saying where we are slower, from the
 *   own-process run (own-latest.json; the in-process run for the scenarios only it measures, marked
 *   so), and the targets missed;
 * - docs/benchmarks.md, between `<!-- bench-servers:start -->` and `<!-- bench-servers:end -->`: the
 *   plain cycle per server, ours against node-redlock (bench/own-servers.ts, from
 *   bench/results/own-<server>.json);
 * - README.md, between `<!-- bench:start -->` and `<!-- bench:end -->`: that table's ratios as two
 *   short lists, where we lead and where we do not (targets and tables are ours to track, in the docs);
 * - docs/chaos.md and README.md, between `<!-- chaos:start -->` and `<!-- chaos:end -->`: the long
 *   chaos run's tables (chaos/results/latest.md, the saved output of `npm run chaos`), whole in the
 *   docs, its totals as one line in the README;
 * - docs/chaos.md and README.md, between `<!-- chaos-classes:start -->` and `<!-- chaos-classes:end -->`:
 *   the kernel fault lab's table by fault class (chaos/results/kernel-latest.md, written by
 *   `npm run chaos:classes`), whole in the docs, its verdict and the sums outside the assumptions in
 *   the README;
 * - docs/scaling.md, between `<!-- scaling:start -->` and `<!-- scaling:end -->`: the latest full
 *   `npm run bench:scaling` (bench/results/scaling.md), whole.
 * `npm run bench` calls `updateReadme` after a full run; `npm run bench:readme` regenerates every
 * section from the stored results. The functions only read: test/tooling/readme.test.ts compares them
 * with the files.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Row } from './report.js';
import type { OwnRunRecord } from './own-run.js';
import { judge, metrics, ownMeasuresOf, type Metric } from './own-report.js';
import { BENCH_SERVERS_MARKERS, serversSection } from './own-servers.js';
import { fixed } from './report.js';
import { median, range } from './rounds.js';
import { measures, spreadMarkdown, targetsMarkdown, type RunRecord, type SpreadColumn } from './targets.js';

export const BENCH_MARKERS = { start: '<!-- bench:start -->', end: '<!-- bench:end -->' } as const;
export const BENCH_SUMMARY_MARKERS = { start: '<!-- bench-summary:start -->', end: '<!-- bench-summary:end -->' } as const;
export const CHAOS_MARKERS = { start: '<!-- chaos:start -->', end: '<!-- chaos:end -->' } as const;
export const CLASSES_MARKERS = { start: '<!-- chaos-classes:start -->', end: '<!-- chaos-classes:end -->' } as const;
export const SCALING_MARKERS = { start: '<!-- scaling:start -->', end: '<!-- scaling:end -->' } as const;
/** Full runs shown in the spread, the latest last. */
export const SPREAD_RUNS = 3;

/** The repository's root, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface StoredRun extends RunRecord {
  readonly command: string;
  readonly quick: boolean;
  readonly machine?: string;
  /** The own-process mode's record, in runs since `npm run bench` runs both modes. */
  readonly own?: OwnRunRecord;
}

/** The stored full runs (`npm run bench`, no `--quick` or `--only`), oldest first; older runs' records read as they were written. */
export function fullRuns(resultsDir: string): StoredRun[] {
  const dir = `${resultsDir}runs/`;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^\d{4}-.*\.json$/.test(name))
    .sort()
    .map((name) => JSON.parse(readFileSync(`${dir}${name}`, 'utf8')) as StoredRun)
    .filter((run) => !run.quick && run.command === 'npm run bench')
    .map((run) => ({ ...run, rows: run.rows.map(renamedScenario) }));
}

/** Runs before the hot key across processes came in called the cluster-voter comparison S6: it is S7 now. */
const CLUSTER_LABELS = new Set(['standalone ×3', 'cluster ×3×3']);
function renamedScenario(row: Row): Row {
  return row.scenario === 'S6' && CLUSTER_LABELS.has(row.label) ? { ...row, scenario: 'S7' } : row;
}

/** The latest full own-process run: bench/results/own-latest.json, written by a full `npm run bench` or `npm run bench:own`. */
function ownLatest(resultsDir: string): OwnRunRecord {
  const path = `${resultsDir}own-latest.json`;
  if (!existsSync(path)) throw new Error(`no ${path}: run npm run bench (or npm run bench:own)`);
  return JSON.parse(readFileSync(path, 'utf8')) as OwnRunRecord;
}

/** A results markdown file under the generated section's headings: its `##` title line dropped, `###` one level down. */
function demoted(path: string): string {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('## '))
    .map((line) => (line.startsWith('### ') ? `#${line}` : line))
    .join('\n')
    .trim();
}

const runName = (run: { readonly date: string; readonly commit?: string }): string => `${run.date.slice(0, 10)}${run.commit ? `, commit ${run.commit}` : ''}`;

/** The spread table of `columns` under its heading; a note instead while fewer than two runs hold them. */
function spreadSection(title: string, columns: readonly SpreadColumn[], missing: string): string {
  return columns.length > 1
    ? [
        `#### Spread over the last ${columns.length} full runs: ${title}`,
        '',
        'The Targets figures of each run (of the code at its commit, where recorded) and their range: on 2 shared cores a single run is one sample.',
        '',
        spreadMarkdown(columns),
      ].join('\n')
    : `#### Spread: ${title}\n\n${missing}`;
}

/**
 * docs/benchmarks.md's generated section: the latest own-process run whole (what the README shows),
 * the latest full run's in-process tables (the secondary ones), the spread of both modes' targets
 * over the last full runs, the held locks.
 */
export function benchmarksSection(resultsDir: string): string {
  const own = ownLatest(resultsDir);
  const runs = fullRuns(resultsDir).slice(-SPREAD_RUNS);
  const ownRuns = fullRuns(resultsDir).filter((run) => run.own).slice(-SPREAD_RUNS);
  const held = existsSync(`${resultsDir}held.md`)
    ? ['#### Many held locks (`npm run bench:held`)', '', readFileSync(`${resultsDir}held.md`, 'utf8').trim()].join('\n')
    : '';
  return [
    BENCH_MARKERS.start,
    '<!-- generated by bench/readme.ts from bench/results: edit those, not this -->',
    '',
    `### Each library in its own process: what the README shows (\`${own.command}\`, ${runName(own)})`,
    '',
    demoted(`${resultsDir}own-latest.md`),
    '',
    '### Every library in one process: the secondary tables (latest full `npm run bench`)',
    '',
    '![each scenario, one panel: latency or throughput per library](../bench/results/latest.svg)',
    '',
    demoted(`${resultsDir}latest.md`),
    '',
    spreadSection(
      'own process',
      ownRuns.map((run) => ({ date: run.date, ...(run.commit ? { commit: run.commit } : {}), measures: ownMeasuresOf(run.own!) })),
      'Fewer than two full `npm run bench` runs in bench/results/runs/ hold the own-process mode yet; the spread appears from the second.',
    ),
    '',
    runs.length > 1 ? spreadSection('in process', runs.map((run) => ({ date: run.date, ...(run.commit ? { commit: run.commit } : {}), measures: measures(run) })), '') : '',
    '',
    held,
    BENCH_MARKERS.end,
  ].join('\n');
}

/** One line of the summary (docs/benchmarks.md's table, the README's lists): a scenario's figure, ours against the best of the peers. */
interface SummaryLine {
  readonly scenario: string;
  readonly what: string;
  readonly unit: string;
  readonly higherIsBetter: boolean;
  /** The in-process run's figure, where that mode shows this line. */
  readonly value?: (row: Row) => number;
  /** The own-process run's, where that mode measures this line, and how its best peer is picked if not by it. */
  readonly metric?: Metric;
  readonly rankBy?: Metric;
  readonly ours: string;
  /** In process; the own-process mode compares with its peers (node-redlock, redlock-universal, redis-semaphore). */
  readonly peers: readonly string[];
  /** A hot-key throughput line: its notes say how many acquisitions gave up. */
  readonly givesUp?: boolean;
}

const PEERS = ['node-redlock', 'sesamecare', 'redis-semaphore', 'redlock-universal'];
const OWN_PEERS = ['node-redlock', 'redlock-universal', 'redis-semaphore'];
const p50 = { unit: 'p50 ms', value: (row: Row): number => row.p50Ms, metric: metrics.p50, higherIsBetter: false };
const throughput = (unit: string) => ({ unit, value: (row: Row): number => row.opsPerSecond, metric: metrics.opsPerSecond, higherIsBetter: true });
/** The own-process line compares with the fastest peer's longest wait, as the target does (bench/own-report.ts). */
const maxWait = {
  unit: 'max wait ms', value: (row: Row): number => row.maxWaitMs ?? Number.NaN, metric: metrics.maxWait, rankBy: metrics.opsPerSecond, higherIsBetter: false,
};
const SUMMARY: readonly SummaryLine[] = [
  { scenario: 'S1', what: 'S1: one worker, acquire + release', ...p50, ours: 'ours', peers: PEERS },
  { scenario: 'S1', what: 'S1 on ioredis clients', ...p50, ours: 'ours (ioredis)', peers: PEERS },
  { scenario: 'S1', what: 'S1: process CPU per lock cycle', unit: 'µs', metric: metrics.cpu, higherIsBetter: false, ours: 'ours', peers: PEERS },
  { scenario: 'S2 64 workers', what: 'S2: 64 workers, distinct keys', ...throughput('ops/s'), ours: 'ours', peers: PEERS },
  { scenario: 'S2 256 workers', what: 'S2: 256 workers, distinct keys', ...throughput('ops/s'), ours: 'ours', peers: PEERS },
  { scenario: 'S3', what: 'S3: hot key, 16 workers, one process', ...throughput('ops/s'), ours: 'ours', peers: PEERS, givesUp: true },
  { scenario: 'S3', what: 'S3: the longest wait for it', ...maxWait, ours: 'ours', peers: PEERS },
  { scenario: 'S4 S1', what: 'S4: S1, one master blackholed', ...p50, ours: 'ours', peers: PEERS },
  { scenario: 'S4 S2 64 workers', what: 'S4: S2 @ 64, one master blackholed', ...throughput('ops/s'), ours: 'ours', peers: PEERS },
  { scenario: 'S5', what: 'S5: S1, one master +20 ms', ...p50, ours: 'ours', peers: PEERS },
  { scenario: 'S6', what: 'S6: hot key, 4 processes × 4 workers, defaults', ...throughput('acquisitions/s'), ours: 'ours', peers: PEERS, givesUp: true },
  { scenario: 'S6', what: 'S6: the longest wait for it', ...maxWait, ours: 'ours', peers: PEERS },
  { scenario: 'S7', what: 'S7: S2 @ 64 on 3 Redis Cluster voters vs 3 standalone (ours both)', ...throughput('ops/s'), ours: 'cluster ×3×3', peers: ['standalone ×3'] },
  { scenario: 'S8', what: 'S8: semaphore, limit 4, 16 workers', ...throughput('acquisitions/s'), ours: 'ours', peers: ['redis-semaphore'] },
  { scenario: 'S8', what: 'S8: fair semaphore (fair: true), limit 4, 16 workers', ...throughput('acquisitions/s'), ours: 'ours (fair)', peers: ['redis-semaphore'] },
  { scenario: 'S8', what: 'S8, fair: true: the longest wait for a permit', ...maxWait, ours: 'ours (fair)', peers: ['redis-semaphore'] },
  { scenario: 'S9', what: 'S9: read-write, 90 % reads (the peer has no read-write lock: a mutex)', ...throughput('holds/s'), ours: 'ours', peers: ['redis-semaphore (mutex)'] },
];

/** Short names for the summary's peer column. */
const SHORT_NAMES: Readonly<Record<string, string>> = {
  'node-redlock': 'node-redlock',
  sesamecare: '@sesamecare-oss/redlock',
  'redis-semaphore': 'redis-semaphore',
  'redis-semaphore (mutex)': 'redis-semaphore RedlockMutex',
  'redlock-universal': 'redlock-universal',
  'standalone ×3': 'ours, 3 standalone voters',
};
const shortName = (label: string): string => SHORT_NAMES[label] ?? label;

const isAhead = (line: SummaryLine, ratio: number): boolean => (line.higherIsBetter ? ratio >= 1 : ratio <= 1);

function verdict(line: SummaryLine, ratio: number): string {
  const better = isAhead(line, ratio);
  if (line.unit === 'max wait ms') return better ? 'shorter' : '**longer**';
  if (line.unit === 'µs') return better ? 'less' : '**more**';
  return better ? 'faster' : '**slower**';
}

/** One summary line as measured: its row in docs/benchmarks.md's table, and the ratio the README lists. */
interface SummaryFigure {
  readonly what: string;
  readonly unit: string;
  /** Ours ÷ the best peer, as the table shows it. */
  readonly ratio: string;
  /** Ours is the better of the two (faster, shorter, less). */
  readonly ahead: boolean;
  /** Peers that hung, acquisitions given up: what a ratio alone does not say. */
  readonly notes: string;
  readonly row: string;
}

/** A line from the own-process run: medians over its rounds, the median of the per-round ratios and their range. */
function ownLine(own: OwnRunRecord, line: SummaryLine & { readonly metric: Metric }): SummaryFigure | undefined {
  const target = {
    kind: 'ratio' as const, id: line.what, scenario: line.scenario, ours: line.ours, peers: OWN_PEERS, metric: line.metric, goal: '',
    ...(line.rankBy ? { rankBy: line.rankBy } : {}),
  };
  const result = judge(own.records, target, own.plan.rounds);
  if (!Number.isFinite(result.value)) return undefined;
  const { min, max } = range(result.perRound);
  const best = [...new Set(result.peerLabels.filter((label): label is string => label !== undefined))].map(shortName).join(', ');
  const scenarioRecords = own.records.filter((record) => record.scenario === line.scenario);
  const notes: string[] = [];
  const hung = [...new Set(scenarioRecords.filter((record) => OWN_PEERS.includes(record.label) && record.slice.hung > 0).map((record) => shortName(record.label)))];
  if (hung.length) notes.push(`${hung.join(', ')}: hang`);
  if (line.givesUp) {
    const gaveUp = (label: string): number => scenarioRecords.filter((record) => record.label === label).reduce((sum, record) => sum + record.slice.failures, 0);
    notes.push(`gave up: ours ${gaveUp(line.ours)}, ${OWN_PEERS.map((label) => `${shortName(label)} ${gaveUp(label)}`).join(', ')}`);
  }
  const shown = (value: number): string => fixed(value, line.metric.digits);
  const row = `| ${line.what} | ${line.unit} | ${shown(median(result.ours))} | ${best} ${shown(median(result.peer))} | ` +
    `${fixed(result.value)}× (${fixed(min)}–${fixed(max)}) | ${verdict(line, result.value)} | ${notes.join('; ')} |`;
  return { what: line.what, unit: line.unit, ratio: fixed(result.value), ahead: isAhead(line, result.value), notes: notes.join('; '), row };
}

/** A line from the in-process run (scenarios the own-process run did not measure), marked so. */
function inProcessLine(run: StoredRun, line: SummaryLine & { readonly value: (row: Row) => number }): SummaryFigure | undefined {
  const usable = (row: Row | undefined): row is Row => row !== undefined && row.cycles > 0 && row.hung === 0;
  const name = (row: Row): string => shortName(row.label);
  const scenarioRows = run.rows.filter((row) => row.scenario === line.scenario);
  const ours = scenarioRows.find((row) => row.label === line.ours);
  const peers = line.peers.map((label) => scenarioRows.find((row) => row.label === label)).filter(usable);
  const best = [...peers].sort((a, b) => (line.higherIsBetter ? line.value(b) - line.value(a) : line.value(a) - line.value(b)))[0];
  if (!usable(ours) || !best || !Number.isFinite(line.value(ours))) return undefined;
  const shown = (row: Row): string => (line.unit === 'p50 ms' ? line.value(row).toFixed(3) : String(Math.round(line.value(row))));
  const ratio = line.value(ours) / line.value(best);
  const notes: string[] = [];
  const hung = scenarioRows.filter((row) => line.peers.includes(row.label) && row.hung > 0);
  if (hung.length) notes.push(`${hung.map(name).join(', ')}: hang`);
  if (line.givesUp) notes.push(`gave up: ours ${ours.failures}, ${peers.map((row) => `${name(row)} ${row.failures}`).join(', ')}`);
  const what = `${line.what} (in process)`;
  const row = `| ${what} | ${line.unit} | ${shown(ours)} | ${name(best)} ${shown(best)} | ${ratio.toFixed(2)}× | ${verdict(line, ratio)} | ${notes.join('; ')} |`;
  return { what, unit: line.unit, ratio: ratio.toFixed(2), ahead: isAhead(line, ratio), notes: notes.join('; '), row };
}

/** The scenario group a scenario or a measure belongs to: 'S2' of 'S2 64 workers' and of 'S2 @ 64 vs best peer'. */
const groupOf = (name: string): string | undefined => /^(S\d)\b/.exec(name)?.[1];

/** The own-process run's lines where it measured them, the in-process run's for the rest. */
function summaryFigures(own: OwnRunRecord, run: StoredRun | undefined): SummaryFigure[] {
  const measuredOwn = new Set(own.records.map((record) => record.scenario));
  return SUMMARY.flatMap((line) => {
    const figure = line.metric && measuredOwn.has(line.scenario)
      ? ownLine(own, { ...line, metric: line.metric })
      : line.value && run ? inProcessLine(run, { ...line, value: line.value }) : undefined;
    return figure === undefined ? [] : [figure];
  });
}

function summaryTable(figures: readonly SummaryFigure[]): string {
  return [
    '| scenario | measure | redlock-quorum | best peer | ours ÷ peer (range) | ours is | notes |',
    '|---|---|---:|---:|---:|---|---|',
    ...figures.map((figure) => figure.row),
  ].join('\n');
}

/**
 * README's generated benchmark summary: the summary table's ratios, where we lead and where we do
 * not, and where the figures behind them are.
 */
export function benchSummarySection(resultsDir: string): string {
  const own = ownLatest(resultsDir);
  const run = fullRuns(resultsDir).at(-1);
  const figures = summaryFigures(own, run);
  const list = (ahead: boolean): string[] => {
    const picked = figures.filter((figure) => figure.ahead === ahead);
    return picked.length ? picked.map((figure) => `  - ${figure.what}: ${figure.ratio}× (${[figure.unit, figure.notes].filter(Boolean).join('; ')})`) : ['  - none'];
  };
  return [
    BENCH_MARKERS.start,
    '<!-- generated by bench/readme.ts from bench/results: edit those, not this -->',
    '',
    `Ours ÷ the best peer in each scenario, from the latest run with each library in its own process (\`${own.command}\`, ${runName(own)}); ` +
      `"in process": scenarios only the full \`npm run bench\`${run ? ` (${runName(run)})` : ''} measures, every library in one process.`,
    '',
    '- **Where we lead:**',
    ...list(true),
    '- **Where we do not:**',
    ...list(false),
    '',
    'The figures behind each ratio, their range over rounds, every table and our targets: ' +
      '[docs/benchmarks.md](docs/benchmarks.md#ours-against-the-best-peer).',
    BENCH_MARKERS.end,
  ].join('\n');
}

/**
 * docs/benchmarks.md's summary: per scenario ours against the best peer, from the latest
 * own-process run (the in-process run for the scenarios it does not measure), and the targets
 * missed: the own-process run's, then the in-process run's of the scenarios only it measured.
 */
export function benchSummaryTableSection(resultsDir: string): string {
  const own = ownLatest(resultsDir);
  const run = fullRuns(resultsDir).at(-1);
  const ownGroups = new Set(own.records.map((record) => groupOf(record.scenario)));
  const missedOwn = ownMeasuresOf(own).filter((measure) => measure.met === false);
  const missedInProcess = (run ? measures(run) : [])
    .filter((measure) => measure.met === false && !ownGroups.has(groupOf(measure.id)))
    .map((measure) => ({ ...measure, text: `in process: ${measure.text}` }));
  const missed = [...missedOwn, ...missedInProcess];
  const missedLines = missed.length
    ? targetsMarkdown(missed).replace(/^### Targets\n/, '').trim()
    : '- none';
  return [
    BENCH_SUMMARY_MARKERS.start,
    '<!-- generated by bench/readme.ts from bench/results: edit those, not this -->',
    '',
    `Each library alone in its own process, as users run it (\`${own.command}\`, ${runName(own)}${own.machine ? `, ${own.machine}` : ''}, ` +
      `5 local masters, ${own.plan.rounds} interleaved rounds): each figure is the median over the rounds, the ratio the median of the per-round ` +
      'ratios (their range in brackets), the best peer the best of node-redlock 5.0.0-beta.2, redlock-universal 0.8.5 and redis-semaphore 5.8.0 ' +
      'in each round (a peer that hangs is left out). Rows marked "in process" are scenarios that run did not measure, from the latest full ' +
      `\`npm run bench\`${run ? ` (${runName(run)})` : ''} with every library in one process, where @sesamecare-oss/redlock 1.4.0 is a peer too.`,
    '',
    summaryTable(summaryFigures(own, run)),
    '',
    'Targets missed (own process; "in process": scenarios only that mode measured):',
    '',
    missedLines,
    BENCH_SUMMARY_MARKERS.end,
  ].join('\n');
}

/** What a saved chaos run says: its replay command and its tables, as printed. */
interface ChaosRun {
  readonly command: string;
  readonly headline: string;
  readonly tables: readonly (readonly string[])[];
}

function chaosRun(latestPath: string): ChaosRun {
  const lines = readFileSync(latestPath, 'utf8').split('\n');
  const headline = lines.find((line) => line.startsWith('chaos: '));
  const command = /replay: ([^)]+)\)/.exec(headline ?? '')?.[1];
  if (!headline || !command) throw new Error(`${latestPath}: no "chaos: … (replay: …)" line; save the whole output of npm run chaos`);
  const tables: string[][] = [];
  let current: string[] | undefined;
  for (const line of lines) {
    if (line.startsWith('|')) {
      current ??= [];
      current.push(line);
    } else if (current) {
      tables.push(current);
      current = undefined;
    }
  }
  if (current) tables.push(current);
  if (tables.length < 2) throw new Error(`${latestPath}: expected the workload table and the totals table`);
  return { command, headline: headline.replace(/^chaos: /, '').replace(/ \(replay: [^)]+\)/, ''), tables };
}

/** docs/chaos.md's generated section: the run's tables, whole. */
export function chaosSection(latestPath: string): string {
  const run = chaosRun(latestPath);
  return [
    CHAOS_MARKERS.start,
    '<!-- generated by bench/readme.ts from chaos/results/latest.md: edit that, not this -->',
    '',
    `The latest long run (\`${run.command}\`: ${run.headline}; its whole output, with the fault schedule, is [chaos/results/latest.md](../chaos/results/latest.md)):`,
    '',
    ...run.tables.flatMap((table) => [...table, '']),
    CHAOS_MARKERS.end,
  ].join('\n');
}

/** The totals the README shows of a chaos run, by their row names in its totals table. */
const CHAOS_TOTALS = [
  'duration, workers, resources',
  'critical sections completed',
  'acquire success rate',
  'safety-oracle violations',
  'violations',
  'liveness violations',
];

/** The cells of a markdown table's line, trimmed. */
const cells = (line: string): string[] => line.split('|').slice(1, -1).map((cell) => cell.trim());

/** README's generated chaos summary: a few totals of the latest long run, on one line. */
export function chaosSummarySection(latestPath: string): string {
  const run = chaosRun(latestPath);
  const totals = (run.tables[run.tables.length - 1] ?? []).map(cells);
  const picked = CHAOS_TOTALS.flatMap((name) => totals.filter(([measure]) => measure === name).map(([, value]) => `${name}: ${value ?? ''}`));
  return [
    CHAOS_MARKERS.start,
    '<!-- generated by bench/readme.ts from chaos/results/latest.md: edit that, not this -->',
    '',
    `Latest long chaos run (\`${run.command}\`): ${picked.join('; ')} ([every table](docs/chaos.md#results)).`,
    CHAOS_MARKERS.end,
  ].join('\n');
}

/**
 * The kernel fault lab's table by fault class (chaos/results/kernel-latest.md): its run line, the
 * table and its verdict line, as written; `link` is the results file as the page links it.
 */
export function classesSection(path: string, link: string): string {
  const lines = readFileSync(path, 'utf8').split('\n');
  const run = lines.find((line) => line.includes('per class'));
  const table = lines.filter((line) => line.startsWith('|'));
  const verdict = lines.find((line) => line.startsWith('Inside the assumptions'));
  if (!run || table.length < 3 || !verdict) throw new Error(`${path}: expected the run line, the table and the verdict of npm run chaos:classes`);
  return [
    CLASSES_MARKERS.start,
    '<!-- generated by bench/readme.ts from chaos/results/kernel-latest.md: edit that, not this -->',
    '',
    `The latest run by fault class, in the kernel fault lab ([${link.replace(/^(\.\.\/)+/, '')}](${link})): ${run}`,
    '',
    ...table,
    '',
    verdict,
    CLASSES_MARKERS.end,
  ].join('\n');
}

/**
 * README's line of the kernel fault lab's run by fault class: its verdict, and each count summed
 * over the classes outside the assumptions (what breaks there is the point of running them).
 */
export function classesSummarySection(path: string): string {
  const lines = readFileSync(path, 'utf8').split('\n');
  const run = lines.find((line) => line.includes('per class'));
  const [header, , ...rows] = lines.filter((line) => line.startsWith('|')).map(cells);
  const verdict = lines.find((line) => line.startsWith('Inside the assumptions'));
  if (!run || !header || rows.length === 0 || !verdict) throw new Error(`${path}: expected the run line, the table and the verdict of npm run chaos:classes`);
  const within = header.indexOf('within the assumptions');
  const outside = rows.filter((row) => row[within] === 'no');
  // The counts only: a column whose cells are whole numbers, the sections aside (no fault of theirs).
  const sums = header.flatMap((name, column) =>
    name !== 'sections' && outside.length > 0 && outside.every((row) => /^\d+$/.test(row[column] ?? ''))
      ? [`${outside.reduce((sum, row) => sum + Number(row[column]), 0)} ${name}`]
      : []);
  return [
    CLASSES_MARKERS.start,
    '<!-- generated by bench/readme.ts from chaos/results/kernel-latest.md: edit that, not this -->',
    '',
    `By fault class, in the kernel fault lab (${run.split(' · ')[0] ?? run}): ${verdict} ` +
      `Outside the assumptions (${outside.length} of ${rows.length} classes): ${sums.join(', ')} ([by fault class](docs/chaos.md#by-fault-class)).`,
    CLASSES_MARKERS.end,
  ].join('\n');
}

/** docs/scaling.md's generated section: the latest full `npm run bench:scaling` (its tables and their run line), whole. */
export function scalingSection(path: string): string {
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  const command = /^## Scaling — `([^`]+)`$/.exec(lines[0] ?? '')?.[1];
  if (!command) throw new Error(`${path}: expected the "## Scaling — \`npm run bench:scaling\`" heading of a run's output`);
  return [
    SCALING_MARKERS.start,
    '<!-- generated by bench/readme.ts from bench/results/scaling.md: edit that, not this -->',
    '',
    `The latest run (\`${command}\`; its records: [bench/results/scaling.json](../bench/results/scaling.json)):`,
    ...lines.slice(1),
    SCALING_MARKERS.end,
  ].join('\n');
}

/** A generated section: the file it lives in (from the root), its markers, and what it should hold now. */
export interface GeneratedSection {
  readonly file: string;
  readonly markers: { readonly start: string; readonly end: string };
  readonly text: string;
}

/** Every generated section, made from the stored results under `root`. */
export function generatedSections(root = ROOT): GeneratedSection[] {
  const scaling = `${root}bench/results/scaling.md`;
  return [
    ...benchSections(root),
    ...chaosSections(root),
    ...(existsSync(scaling) ? [{ file: 'docs/scaling.md', markers: SCALING_MARKERS, text: scalingSection(scaling) }] : []),
  ];
}

function benchSections(root: string): GeneratedSection[] {
  const resultsDir = `${root}bench/results/`;
  return [
    { file: 'README.md', markers: BENCH_MARKERS, text: benchSummarySection(resultsDir) },
    { file: 'docs/benchmarks.md', markers: BENCH_SUMMARY_MARKERS, text: benchSummaryTableSection(resultsDir) },
    { file: 'docs/benchmarks.md', markers: BENCH_SERVERS_MARKERS, text: serversSection(resultsDir) },
    { file: 'docs/benchmarks.md', markers: BENCH_MARKERS, text: benchmarksSection(resultsDir) },
  ];
}

function chaosSections(root: string): GeneratedSection[] {
  const latest = `${root}chaos/results/latest.md`;
  return [
    { file: 'README.md', markers: CHAOS_MARKERS, text: chaosSummarySection(latest) },
    { file: 'docs/chaos.md', markers: CHAOS_MARKERS, text: chaosSection(latest) },
    ...(existsSync(`${root}chaos/results/kernel-latest.md`)
      ? [
          { file: 'README.md', markers: CLASSES_MARKERS, text: classesSummarySection(`${root}chaos/results/kernel-latest.md`) },
          { file: 'docs/chaos.md', markers: CLASSES_MARKERS, text: classesSection(`${root}chaos/results/kernel-latest.md`, '../chaos/results/kernel-latest.md') },
        ]
      : []),
  ];
}

/** The text between a section's markers, markers included; undefined if they are missing. */
export function currentSection(content: string, markers: { readonly start: string; readonly end: string }): string | undefined {
  const start = content.indexOf(markers.start);
  const end = content.indexOf(markers.end, start);
  return start < 0 || end < 0 ? undefined : content.slice(start, end + markers.end.length);
}

/** Replaces every section in its file; checks every file has its markers before writing any. */
function write(root: string, sections: readonly GeneratedSection[]): void {
  const contents = new Map<string, string>();
  for (const section of sections) {
    const content = contents.get(section.file) ?? readFileSync(`${root}${section.file}`, 'utf8');
    const current = currentSection(content, section.markers);
    if (current === undefined) throw new Error(`${section.file} has no ${section.markers.start} … ${section.markers.end} section to regenerate`);
    contents.set(section.file, content.replace(current, () => section.text));
  }
  for (const [file, content] of contents) writeFileSync(`${root}${file}`, content);
}

/** After a full bench run: the benchmark sections of README.md and docs/benchmarks.md. */
export function updateReadme(resultsDir: string, root = ROOT): void {
  const made = (section: GeneratedSection): string =>
    section.file === 'README.md' ? benchSummarySection(resultsDir)
      : section.markers === BENCH_SUMMARY_MARKERS ? benchSummaryTableSection(resultsDir)
        : section.markers === BENCH_SERVERS_MARKERS ? serversSection(resultsDir) : benchmarksSection(resultsDir);
  write(root, benchSections(root).map((section) => ({ ...section, text: made(section) })));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  write(ROOT, generatedSections());
  console.log('README.md, docs/benchmarks.md, docs/chaos.md, docs/scaling.md: generated sections regenerated from bench/results and chaos/results');
}
