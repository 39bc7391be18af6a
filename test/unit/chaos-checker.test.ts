import { describe, expect, it } from 'vitest';
import { check, type Section } from '../../chaos/checker.js';
import { Storage } from '../../chaos/storage.js';

/** A section that read version `readVersion` at `start` and made version `version` at `end`. */
const section = (worker: number, start: number, end: number, readVersion: number, version: number, expiration = 10_000): Section => ({
  worker,
  resource: 'r',
  value: `lock-${worker}-${start}`,
  start,
  end,
  expiration,
  readVersion,
  version,
});
const counter = (value: number): Map<string, number> => new Map([['r', value]]);

describe('chaos checker', () => {
  it('passes a clean history', () => {
    const history = [section(0, 0, 10, 0, 1), section(1, 10, 20, 1, 2), section(2, 25, 30, 2, 3)];
    expect(check(history, counter(3))).toEqual({ violations: [], pausedPastValidity: 0, lostUpdates: 0 });
  });

  it('flags two holders with overlapping sections, also past a short one in between', () => {
    const history = [section(0, 0, 100, 0, 3), section(1, 10, 20, 0, 1), section(2, 50, 60, 1, 2)];
    const { violations } = check(history, counter(1));
    expect(violations.filter((v) => v.startsWith('overlap'))).toEqual([
      expect.stringMatching(/overlap on r: worker 0 \[0, 100\] and worker 1 \[10, 20\]/),
      expect.stringMatching(/worker 0 \[0, 100\] and worker 2 \[50, 60\]/),
    ]);
  });

  it('flags a write that erased another when both were within their validity', () => {
    // Worker 1 read v0 and wrote v2, over worker 0's v1: both in time, so both held the lock.
    const history = [section(0, 0, 10, 0, 1), section(1, 5, 12, 0, 2)];
    const { violations, lostUpdates } = check(history, counter(1));
    expect(violations).toContainEqual(expect.stringMatching(/lost update on r: worker 1 .* erased worker 0's write v1 at 10, both within their validity/));
    expect(lostUpdates).toBe(1);
  });

  it('counts updates erased by a write made after its lock expired (a paused worker), without a violation', () => {
    // Worker 0 read v0 at 0, its lock expired at 50, others wrote v1..v3, then it resumed and wrote v4 = 0 + 1.
    const history = [section(0, 0, 200, 0, 4, 50), section(1, 60, 70, 0, 1), section(2, 80, 90, 1, 2), section(3, 100, 110, 2, 3)];
    expect(check(history, counter(1))).toEqual({ violations: [], pausedPastValidity: 1, lostUpdates: 3 });
    // A valid write that read before the late write also erases it: still the late section's doing.
    const after = [...history, section(1, 190, 210, 3, 5)];
    expect(check(after, counter(4))).toEqual({ violations: [], pausedPastValidity: 1, lostUpdates: 1 });
  });

  it('flags a counter that its history of writes does not give', () => {
    expect(check([section(0, 0, 10, 0, 1)], counter(0)).violations).toEqual(['counter on r is 0, but its history of writes gives 1']);
  });

  it('flags a fencing token that does not increase in start order, also across a section paused past validity', () => {
    const fenced = (worker: number, start: number, end: number, version: number, token: number, expiration = 10_000): Section => ({
      ...section(worker, start, end, version - 1, version, expiration),
      token,
    });
    const clean = [fenced(0, 0, 10, 1, 1), fenced(1, 12, 20, 2, 2, 15), fenced(2, 30, 40, 3, 5)];
    expect(check(clean, counter(3)).violations).toEqual([]);
    const repeated = [fenced(0, 0, 10, 1, 1), fenced(1, 12, 20, 2, 3, 15), fenced(2, 30, 40, 3, 3)];
    expect(check(repeated, counter(3)).violations).toEqual([
      'fencing token on r did not increase: worker 1 token 3 at 12, then worker 2 token 3 at 30',
    ]);
  });
});

describe('chaos storage', () => {
  const write = (worker: number, value: number, readVersion: number, token?: number) =>
    [worker, { op: 'write', resource: 'r', value, readVersion, start: 0, lock: `lock-${worker}`, expiration: Date.now() + 10_000, token }] as const;

  it('versions every write and records it as a section', () => {
    const storage = new Storage(false);
    expect(storage.serve(0, { op: 'read', resource: 'r' })).toMatchObject({ value: 0, version: 0, ok: true });
    storage.serve(...write(0, 1, 0));
    storage.serve(...write(1, 1, 0)); // read v0 too: a lost update, recorded as such
    expect(storage.counter('r')).toBe(1);
    expect(storage.sections.map((s) => [s.worker, s.readVersion, s.version])).toEqual([[0, 0, 1], [1, 0, 2]]);
  });

  it('with fencing, refuses a token below the largest seen and records nothing for it', () => {
    const storage = new Storage(true);
    expect(storage.serve(...write(0, 1, 0, 5)).ok).toBe(true);
    expect(storage.serve(...write(1, 1, 0, 4))).toMatchObject({ ok: false, value: 1, version: 1 });
    expect(storage.serve(...write(2, 2, 1, 5)).ok).toBe(true); // equal: the same lock writing again
    expect(storage.sections.map((s) => s.token)).toEqual([5, 5]);
  });
});
