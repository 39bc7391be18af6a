import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandUsOnce, masterDelta, masterReading } from '../../bench/master-stats.js';
import { judge, metrics, NATIVE_COMMAND_TARGET, ownMeasuresOf, ownTargets, type OwnRecord, type OwnTarget } from '../../bench/own-report.js';
import { ownSlice, type OwnSlice } from '../../bench/own-slice.js';
import { addRound } from '../../bench/processes.js';
import { fullRuns } from '../../bench/readme.js';
import type { Row } from '../../bench/report.js';
import { median, range, ratiosPerRound } from '../../bench/rounds.js';
import { jainIndex, newTally } from '../../bench/scenarios.js';
import { spreadMarkdown } from '../../bench/targets.js';

describe('figures over interleaved rounds (bench/rounds.ts)', () => {
  it('takes the median of an odd and of an even count, ignoring rounds that measured nothing', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([Number.NaN, 5, 1])).toBe(3);
    expect(median([])).toBeNaN();
  });

  it('gives the range of the measured rounds', () => {
    expect(range([1.2, 0.9, Number.NaN, 1.5])).toEqual({ min: 0.9, max: 1.5 });
    expect(range([]).min).toBeNaN();
  });

  it('divides round by round, NaN where a side is missing or zero', () => {
    expect(ratiosPerRound([2, 3, 4, 1], [1, 0, undefined, 4])).toEqual([2, Number.NaN, Number.NaN, 0.25]);
  });
});

describe("the masters' counters (bench/master-stats.ts)", () => {
  const info = (evalshaCalls: number, evalshaUsec: number, infoUsec: number, user: string, sys: string): string =>
    [
      '# Commandstats',
      `cmdstat_evalsha:calls=${evalshaCalls},usec=${evalshaUsec},usec_per_call=1.00,rejected_calls=0,failed_calls=0`,
      'cmdstat_publish:calls=4,usec=20,usec_per_call=5.00,rejected_calls=0,failed_calls=0',
      `cmdstat_info:calls=9,usec=${infoUsec},usec_per_call=1.00,rejected_calls=0,failed_calls=0`,
      '',
      '# CPU',
      `used_cpu_sys:${sys}`,
      `used_cpu_user:${user}`,
      'used_cpu_sys_children:7.000000',
      'used_cpu_user_children:7.000000',
    ].join('\r\n');

  it('reads script calls, command time and each command without the INFO that reads it, and the server CPU without its children', () => {
    expect(masterReading(info(10, 300, 999, '1.250000', '0.500000'))).toEqual({
      scriptCalls: 10, commandUs: 320, cpuUs: 1_750_000, commands: { evalsha: { calls: 10, usec: 300 }, publish: { calls: 4, usec: 20 } },
    });
  });

  it('sums the differences over the masters', () => {
    const before = [masterReading(info(10, 300, 0, '1', '1')), masterReading(info(0, 0, 0, '0', '0'))];
    const after = [masterReading(info(15, 400, 50, '1.000100', '1')), masterReading(info(5, 50, 70, '0', '0.000020'))];
    // PUBLISH ran on neither master between the readings: no count of it.
    expect(masterDelta(before, after)).toEqual({ scriptCalls: 10, commandUs: 150, cpuUs: 120, commands: { evalsha: { calls: 10, usec: 150 } } });
  });

  it("counts a script's commands once, in the script's time, where scripts ran; every command's elsewhere", () => {
    const reading = (commands: Record<string, number>) =>
      ({ scriptCalls: 0, commandUs: 0, cpuUs: 0, commands: Object.fromEntries(Object.entries(commands).map(([name, usec]) => [name, { calls: 1, usec }])) });
    expect(commandUsOnce(reading({ evalsha: 100, get: 5, set: 15, del: 10 }))).toBe(100);
    expect(commandUsOnce(reading({ set: 14, delex: 12, exists: 2, echo: 2 }))).toBe(30);
    expect(commandUsOnce({ scriptCalls: 0, commandUs: 50, cpuUs: 0 })).toBeNaN();
  });
});

describe("Jain's fairness index (bench/scenarios.ts)", () => {
  it('is 1 for equal shares, 1/n when one worker got everything, 0 when nobody got any', () => {
    expect(jainIndex([5, 5, 5, 5])).toBe(1);
    expect(jainIndex([8, 0, 0, 0])).toBe(0.25);
    expect(jainIndex([3, 1])).toBeCloseTo(16 / 20);
    expect(jainIndex([0, 0])).toBe(0);
  });
});

describe('the hot key across processes (bench/processes.ts)', () => {
  it('counts per process for Jain, and a hand-off only where the lock passed to another worker', () => {
    const tally = newTally();
    const round = (holds: number[], acquired: number) =>
      ({ acquired, gaveUp: 0, releaseFailures: 0, hung: 0, cycleUs: holds.filter((_, i) => i % 3 === 0).map(() => 1000), holds, maxWaitMs: 5, elapsedMs: 100, cpuUs: 10 });
    // Process 0's worker 0 holds 0–1 and 1–2 (a re-take, no hand-off), process 1's worker 1 takes it at 2.5.
    addRound(tally, [round([0, 0, 1, 0, 1, 2], 2), round([1, 2.5, 3.5], 1)], 4);
    expect(tally.perWorker).toEqual([2, 1]);
    expect(tally.handoffUs.totalCount).toBe(1);
    expect(tally.handoffUs.getValueAtPercentile(50)).toBeCloseTo(500, -1);
    const slice = ownSlice(tally, 20, true);
    expect(slice.hotKey?.jain).toBeCloseTo(9 / 10);
    expect(slice.hotKey?.maxWaitMs).toBe(5);
  });
});

describe('the own-process targets (bench/own-report.ts)', () => {
  const slice = (figures: Partial<OwnSlice>): OwnSlice => ({ cycles: 100, failures: 0, hung: 0, measuredMs: 1000, p50Ms: 1, p99Ms: 2, cpuUs: 0, ...figures });
  const record = (scenario: string, round: number, label: string, figures: Partial<OwnSlice>): OwnRecord =>
    ({ scenario, round, label, slice: slice(figures), server: { scriptCalls: 0, commandUs: 0, cpuUs: 0 } });
  const hot = (jain: number, handoffP50Ms: number, maxWaitMs: number) => ({ hotKey: { jain, handoffP50Ms, maxWaitMs } });

  it("adds issue 39's command-time target where the server has a compare-and-delete", () => {
    const native = (version?: string): boolean => ownTargets(Number.NaN, version).some((target) => target.id === NATIVE_COMMAND_TARGET && target.goal === '≤ 0.70×');
    expect(['Redis 8.6.3', 'Redis 8.4.0', 'Valkey 9.1.2', 'Redis 10.0.1'].map(native)).toEqual([true, true, true, true]);
    expect(['Redis 7.0.15', 'Redis 8.2.1', 'Valkey 8.1.1', undefined].map(native)).toEqual([false, false, false, false]);
  });

  it('takes the ratio to the best peer of each round, lower or higher as the figure reads', () => {
    const records = [
      record('S1', 0, 'ours', { p50Ms: 0.6 }), record('S1', 0, 'a', { p50Ms: 0.3 }), record('S1', 0, 'b', { p50Ms: 0.4 }),
      record('S1', 1, 'ours', { p50Ms: 0.5 }), record('S1', 1, 'a', { p50Ms: 0.9 }), record('S1', 1, 'b', { p50Ms: 0.25 }),
      // A peer that hung that round is left out of it.
      record('S1', 2, 'ours', { p50Ms: 0.4 }), record('S1', 2, 'a', { p50Ms: 0.1, hung: 1 }), record('S1', 2, 'b', { p50Ms: 0.4 }),
    ];
    const target: OwnTarget = { kind: 'ratio', id: 'S1 p50', scenario: 'S1', ours: 'ours', peers: ['a', 'b'], metric: metrics.p50, goal: '≤ 1.00×' };
    const result = judge(records, target, 3);
    expect(result.peerLabels).toEqual(['a', 'b', 'b']);
    expect(result.perRound).toEqual([2, 2, 1]);
    expect(result.value).toBe(2);
    const faster = judge(records.map((one) => ({ ...one, slice: { ...one.slice, measuredMs: one.slice.p50Ms! * 1000 } })), { ...target, metric: metrics.opsPerSecond }, 3);
    expect(faster.peerLabels).toEqual(['a', 'b', 'b']);
    expect(faster.perRound).toEqual([0.5, 0.5, 1]);
  });

  it('judges the hot key: the ratios, ours\' hand-off in round trips and Jain by their median, the give-ups by their total', () => {
    const records = [0, 1, 2].flatMap((round) => [
      record('S6', round, 'ours', { ...hot(0.999, 0.2 + round * 0.1, 100), failures: 0, cycles: 300 }),
      // Its waits are short because it gives up: the longest wait is compared with the fastest peer's.
      record('S6', round, 'node-redlock', { ...hot(0.5, 1, 300), failures: 3, cycles: 100 }),
      record('S6', round, 'redis-semaphore', { ...hot(0.9, 0.5, 800), failures: 0, cycles: 200 }),
    ]);
    const byId = (rttMs?: number) => new Map(ownMeasuresOf({ plan: { rounds: 3 }, records, ...(rttMs ? { rttMs } : {}) }).map((measure) => [measure.id, measure]));
    const judged = byId(0.1);
    expect(judged.get('S6 throughput: ours ÷ best peer')).toMatchObject({ value: 1.5, met: true });
    expect(judged.get('S6 longest wait: ours ÷ best peer')).toMatchObject({ value: 0.125, met: true });
    expect(judged.get('S6 hand-off p50, round trips')?.value).toBeCloseTo(3);
    expect(judged.get('S6 hand-off p50, round trips')?.met).toBe(false);
    expect(judged.get('S6 Jain')).toMatchObject({ value: 0.999, met: true });
    expect(judged.get('S6 give-ups')).toMatchObject({ value: 0, unit: 'count', met: true });
    expect(judged.get('S6 give-ups')?.text).toContain('node-redlock 9');
    // No S3 records: no S3 targets. A record without a round trip (older runs): no hand-off in round trips.
    expect([...judged.keys()].some((id) => id.startsWith('S3'))).toBe(false);
    expect(byId().has('S6 hand-off p50, round trips')).toBe(false);
  });
});

describe('stored full runs and their spread (bench/readme.ts, bench/targets.ts)', () => {
  const row = (scenario: string, label: string, opsPerSecond: number): Row =>
    ({ scenario, contender: label, label, opsPerSecond, cycles: 10, failures: 0, hung: 0, p50Ms: 1, p90Ms: 1, p99Ms: 1, p999Ms: 1 });

  it('reads full npm run bench runs oldest first, older records as written, and leaves quick and partial runs out', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-runs-'));
    try {
      mkdirSync(join(dir, 'runs'));
      const run = (name: string, body: object): void => writeFileSync(join(dir, 'runs', name), JSON.stringify(body));
      const own = { plan: { rounds: 1 }, records: [], date: '2026-12-03T00:00:00Z', command: 'npm run bench', quick: false, machine: 'm', contenders: [], measures: [] };
      run('2026-12-03T00-00-00-000Z.json', { date: '2026-12-03T00:00:00Z', command: 'npm run bench', quick: false, rows: [row('S2 64 workers', 'ours', 9)], own });
      // Written before S7 existed: its cluster comparison was called S6.
      run('2026-12-01T00-00-00-000Z.json', { date: '2026-12-01T00:00:00Z', command: 'npm run bench', quick: false, rows: [row('S6', 'cluster ×3×3', 5)] });
      run('2026-12-02T00-00-00-000Z.json', { date: '2026-12-02T00:00:00Z', command: 'npm run bench -- --only S1', quick: false, rows: [] });
      run('2026-12-02T01-00-00-000Z.json', { date: '2026-12-02T01:00:00Z', command: 'npm run bench -- --quick', quick: true, rows: [] });
      const runs = fullRuns(`${dir}/`);
      expect(runs.map((stored) => stored.date)).toEqual(['2026-12-01T00:00:00Z', '2026-12-03T00:00:00Z']);
      expect(runs[0]!.rows[0]!.scenario).toBe('S7');
      expect(runs[0]!.own).toBeUndefined();
      expect(runs[1]!.own?.plan.rounds).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('puts each run in a column, a measure a run lacks as a dash, and the range of those it has', () => {
    const measure = (id: string, value: number, met?: boolean) => ({ id, value, goal: '≥ 5×', text: id, ...(met === undefined ? {} : { met }) });
    const table = spreadMarkdown([
      { date: '2026-12-01T10:00:00Z', commit: 'abc', measures: [measure('S2 @ 64', 3, false)] },
      { date: '2026-12-02T10:00:00Z', measures: [measure('S2 @ 64', 6, true), measure('S3 Jain', 0.9991)] },
    ]).split('\n');
    expect(table[0]).toBe('| measure | goal | 2026-12-01 10:00 (abc) | 2026-12-02 10:00 | range |');
    expect(table[2]).toBe('| S2 @ 64 | ≥ 5× | 3.00× (miss) | 6.00× | 3.00–6.00 |');
    expect(table[3]).toBe('| S3 Jain | ≥ 5× | — | 0.999 | 0.999–0.999 |');
  });
});
