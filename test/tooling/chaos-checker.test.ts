import { describe, expect, it } from 'vitest';
import { check, type PermitSection, type ReadSection, type Section, type WriteSection } from '../../chaos/checker.js';
import { Storage, type StorageRequest } from '../../chaos/storage.js';

/** A lock's section that read version `readVersion` at `start` and made version `version` at `end`. */
const section = (worker: number, start: number, end: number, readVersion: number, version: number, expiration = 10_000): WriteSection => ({
  kind: 'lock',
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
    expect(check(history, counter(3))).toMatchObject({ violations: [], pausedPastValidity: 0, lostUpdates: 0 });
  });

  it('flags two holders with overlapping sections, also past a short one in between', () => {
    const history = [section(0, 0, 100, 0, 3), section(1, 10, 20, 0, 1), section(2, 50, 60, 1, 2)];
    const { violations } = check(history, counter(1));
    expect(violations.filter((v) => v.startsWith('overlap'))).toEqual([
      expect.stringMatching(/overlap on r: worker 0 lock \[0, 100\] and worker 1 lock \[10, 20\]/),
      expect.stringMatching(/worker 0 lock \[0, 100\] and worker 2 lock \[50, 60\]/),
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
    expect(check(history, counter(1))).toMatchObject({ violations: [], pausedPastValidity: 1, lostUpdates: 3 });
    // A valid write that read before the late write also erases it: still the late section's doing.
    const after = [...history, section(1, 190, 210, 3, 5)];
    expect(check(after, counter(4))).toMatchObject({ violations: [], pausedPastValidity: 1, lostUpdates: 1 });
  });

  it('flags a counter that its history of writes does not give', () => {
    expect(check([section(0, 0, 10, 0, 1)], counter(0)).violations).toEqual(['counter on r is 0, but its history of writes gives 1']);
  });

  it('flags a fencing token that does not increase in start order, also across a section paused past validity', () => {
    const fenced = (worker: number, start: number, end: number, version: number, token: number, expiration = 10_000): WriteSection => ({
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

describe('chaos checker: semaphores and read-write locks', () => {
  /** A permit of semaphore `s` (limit 2) held over [start, end]. */
  const permit = (worker: number, slot: number, start: number, end: number, expiration = 10_000): PermitSection => ({
    kind: 'permit',
    worker,
    resource: 's',
    value: `permit-${worker}-${start}`,
    start,
    end,
    expiration,
    limit: 2,
    slot,
  });
  /** A read hold's section on read-write lock `rw` that read version `readVersion`. */
  const read = (worker: number, start: number, end: number, readVersion: number, expiration = 10_000): ReadSection => ({
    kind: 'read',
    worker,
    resource: 'rw',
    value: `read-${worker}-${start}`,
    start,
    end,
    expiration,
    readVersion,
  });
  /** A write hold's section on `rw`. */
  const write = (worker: number, start: number, end: number, readVersion: number, version: number): WriteSection => ({
    ...section(worker, start, end, readVersion, version),
    kind: 'write',
    resource: 'rw',
  });
  const rwCounter = (value: number): Map<string, number> => new Map([['rw', value]]);

  it('passes permits up to the limit at once, overlapping reads, and writes between reads', () => {
    const history: Section[] = [
      permit(0, 0, 0, 50),
      permit(1, 1, 10, 60),
      permit(2, 0, 50, 90), // starts as the first ends: two at once, never three
      read(0, 0, 30, 0),
      read(1, 10, 40, 0),
      read(2, 20, 35, 0),
      write(3, 40, 55, 0, 1),
      read(0, 60, 70, 1),
      read(1, 65, 80, 1),
      write(2, 80, 90, 1, 2),
    ];
    const verdict = check(history, rwCounter(2));
    expect(verdict).toMatchObject({ violations: [], pausedPastValidity: 0, lostUpdates: 0 });
    expect(verdict.resources.get('s')).toEqual({ sections: 3, peak: 2, violations: 0 });
    expect(verdict.resources.get('rw')).toEqual({ sections: 7, peak: 3, violations: 0 });
  });

  it('flags limit + 1 permits within their validity at once', () => {
    const history = [permit(0, 0, 0, 50), permit(1, 1, 10, 60), permit(2, 0, 20, 30)];
    const verdict = check(history, new Map());
    expect(verdict.violations).toEqual([
      '3 permits of s within validity at once (limit 2): worker 0 permit (slot 0) [0, 50], worker 1 permit (slot 1) [10, 60], worker 2 permit (slot 0) [20, 30]',
    ]);
    expect(verdict.resources.get('s')).toEqual({ sections: 3, peak: 3, violations: 1 });
  });

  it('counts a permit only until its expiration: one that ended late does not hold a slot past it', () => {
    // Worker 0 was paused past its permit's expiration (40) and left at 100: not a third holder at 50.
    const history = [permit(0, 0, 0, 100, 40), permit(1, 1, 10, 60), permit(2, 0, 50, 90)];
    expect(check(history, new Map())).toMatchObject({ violations: [], pausedPastValidity: 1 });
  });

  it('flags a write overlapping a read, and a read overlapping a write', () => {
    const history = [read(0, 0, 30, 0), write(1, 20, 40, 0, 1), read(2, 35, 50, 0)];
    expect(check(history, rwCounter(1)).violations).toEqual([
      'overlap on rw: worker 0 read [0, 30] and worker 1 write [20, 40]',
      'overlap on rw: worker 1 write [20, 40] and worker 2 read [35, 50]',
    ]);
  });

  it('lets nested reads share with reads, and keeps the pair\'s sections (one lock on both, nested) exclusive', () => {
    const nestedRead = (worker: number, start: number, end: number): ReadSection => ({ ...read(worker, start, end, 0), kind: 'nested-read' });
    expect(check([read(0, 0, 30, 0), nestedRead(1, 10, 40)], rwCounter(0)).violations).toEqual([]);
    expect(check([nestedRead(0, 0, 30), write(1, 20, 40, 0, 1)], rwCounter(1)).violations).toEqual([
      'overlap on rw: worker 0 nested-read [0, 30] and worker 1 write [20, 40]',
    ]);
    const multi = { ...section(0, 0, 30, 0, 1), kind: 'multi' as const };
    const nested = { ...section(1, 20, 40, 0, 2), kind: 'nested' as const };
    expect(check([multi, nested], counter(2)).violations).toContainEqual('overlap on r: worker 0 multi [0, 30] and worker 1 nested [20, 40]');
  });

  it('passes overlapping reads, and leaves them out of the writers\' counter', () => {
    const history = [read(0, 0, 30, 0), read(1, 5, 40, 0), read(2, 10, 20, 0), read(3, 25, 45, 0)];
    const verdict = check(history, rwCounter(0));
    expect(verdict).toMatchObject({ violations: [], lostUpdates: 0 });
    expect(verdict.resources.get('rw')).toEqual({ sections: 4, peak: 3, violations: 0 });
    // The counter is the writes' alone: a read in between does not break the chain.
    expect(check([write(0, 0, 10, 0, 1), read(1, 10, 20, 1), write(2, 20, 30, 1, 2)], rwCounter(2)).violations).toEqual([]);
  });
});

describe('chaos storage', () => {
  const write = (worker: number, value: number, readVersion: number, token?: number): [number, StorageRequest] => [
    worker,
    {
      op: 'write',
      value,
      section: { kind: 'lock', resource: 'r', value: `lock-${worker}`, start: 0, expiration: Date.now() + 10_000, readVersion, ...(token === undefined ? {} : { token }) },
    },
  ];

  it('versions every write and records it as a section', () => {
    const storage = new Storage(false);
    expect(storage.serve(0, { op: 'read', resource: 'r' })).toMatchObject({ value: 0, version: 0, ok: true });
    storage.serve(...write(0, 1, 0));
    storage.serve(...write(1, 1, 0)); // read v0 too: a lost update, recorded as such
    expect(storage.counter('r')).toBe(1);
    const writes = storage.sections as WriteSection[];
    expect(writes.map((s) => [s.worker, s.readVersion, s.version])).toEqual([[0, 0, 1], [1, 0, 2]]);
  });

  it('with fencing, refuses a token below the largest seen and records nothing for it', () => {
    const storage = new Storage(true);
    expect(storage.serve(...write(0, 1, 0, 5)).ok).toBe(true);
    expect(storage.serve(...write(1, 1, 0, 4))).toMatchObject({ ok: false, value: 1, version: 1 });
    expect(storage.serve(...write(2, 2, 1, 5)).ok).toBe(true); // equal: the same lock writing again
    expect((storage.sections as WriteSection[]).map((s) => s.token)).toEqual([5, 5]);
  });

  it('records a read\'s or a permit\'s leave as a section, and changes no counter', () => {
    const storage = new Storage(true);
    storage.serve(...write(0, 1, 0, 5));
    const held = { value: 'v', start: 0, expiration: Date.now() + 10_000 };
    expect(storage.serve(1, { op: 'leave', section: { kind: 'read', resource: 'r', ...held, readVersion: 1 } })).toMatchObject({ value: 1, version: 1, ok: true });
    storage.serve(2, { op: 'leave', section: { kind: 'permit', resource: 's', ...held, limit: 2, slot: 1 } });
    expect(storage.counter('r')).toBe(1);
    expect(storage.sections.map((s) => [s.kind, s.worker, s.resource])).toEqual([
      ['lock', 0, 'r'],
      ['read', 1, 'r'],
      ['permit', 2, 's'],
    ]);
  });
});
