import { describe, expect, it } from 'vitest';
import { check, type Section } from '../../chaos/checker.js';

const section = (worker: number, value: string, start: number, end: number, expiration = 10_000): Section => ({
  worker,
  resource: 'r',
  value,
  start,
  end,
  expiration,
});

describe('chaos checker', () => {
  it('passes a clean history', () => {
    const history = [section(0, 'a', 0, 10), section(1, 'b', 10, 20), section(2, 'c', 25, 30)];
    expect(check(history, new Map([['r', 3]]))).toEqual({ violations: [], pausedPastValidity: 0 });
  });

  it('flags two holders with overlapping sections, also past a short one in between', () => {
    const history = [section(0, 'a', 0, 100), section(1, 'b', 10, 20), section(2, 'c', 50, 60)];
    const { violations } = check(history, new Map([['r', 3]]));
    expect(violations).toHaveLength(2);
    expect(violations[0]).toMatch(/overlap on r: worker 0 \[0, 100\] and worker 1/);
    expect(violations[1]).toMatch(/worker 0 \[0, 100\] and worker 2/);
  });

  it('flags a lost update', () => {
    expect(check([section(0, 'a', 0, 10)], new Map([['r', 0]])).violations).toEqual([
      'lost update on r: counter 0, sections written 1',
    ]);
  });

  it('counts a section written after its lock expired separately, not as an overlap', () => {
    const history = [section(0, 'a', 0, 100, 50), section(1, 'b', 60, 70)];
    expect(check(history, new Map([['r', 2]]))).toEqual({ violations: [], pausedPastValidity: 1 });
  });
});
