import { describe, expect, it } from 'vitest';
import { masterDelta, masterReading } from '../../bench/master-stats.js';
import { median, range, ratiosPerRound } from '../../bench/rounds.js';

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

  it('reads script calls, command time without the INFO that reads it, and the server CPU without its children', () => {
    expect(masterReading(info(10, 300, 999, '1.250000', '0.500000'))).toEqual({ scriptCalls: 10, commandUs: 320, cpuUs: 1_750_000 });
  });

  it('sums the differences over the masters', () => {
    const before = [masterReading(info(10, 300, 0, '1', '1')), masterReading(info(0, 0, 0, '0', '0'))];
    const after = [masterReading(info(15, 400, 50, '1.000100', '1')), masterReading(info(5, 50, 70, '0', '0.000020'))];
    expect(masterDelta(before, after)).toEqual({ scriptCalls: 10, commandUs: 150, cpuUs: 120 });
  });
});
