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

  it('flags a fencing token that does not increase in start order, also across a section paused past validity', () => {
    const fenced = (worker: number, start: number, end: number, token: number, expiration = 10_000): Section => ({
      ...section(worker, `v${worker}`, start, end, expiration),
      token,
    });
    const clean = [fenced(0, 0, 10, 1), fenced(1, 12, 20, 2, 15), fenced(2, 30, 40, 5)];
    expect(check(clean, new Map([['r', 3]])).violations).toEqual([]);
    const repeated = [fenced(0, 0, 10, 1), fenced(1, 12, 20, 3, 15), fenced(2, 30, 40, 3)];
    expect(check(repeated, new Map([['r', 3]])).violations).toEqual([
      'fencing token on r did not increase: worker 1 token 3 at 12, then worker 2 token 3 at 30',
    ]);
  });
});
