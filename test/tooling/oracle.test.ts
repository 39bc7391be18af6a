/**
 * The safety oracle's judgements on made-up master states (no Redis): the quorum bound, the validity
 * verdict and the exclusion check. test/integration/oracle.test.ts shows it failing on real masters.
 */
import { describe, expect, it } from 'vitest';
import type { MasterReading } from '../../lab/master-reader.js';
import {
  SafetyOracle,
  exclusionViolations,
  judgeValidity,
  keyExpiryMs,
  lockBoundMs,
  quorumBoundMs,
  type Belief,
  type KeyReader,
  type MasterView,
  type ObservedLock,
} from '../../lab/oracle.js';

const MASTERS = ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3', '127.0.0.1:4', '127.0.0.1:5'];

function lock(overrides: Partial<ObservedLock> & { aborted?: boolean } = {}): ObservedLock {
  const controller = new AbortController();
  if (overrides.aborted) controller.abort();
  return {
    resources: ['r'],
    value: 'v'.repeat(32),
    expiration: Date.now() + 10_000,
    released: false,
    signal: controller.signal,
    masters: MASTERS,
    quorum: 3,
    reentered: false,
    autoExtending: true,
    ...overrides,
  };
}

type Keys = Record<string, [string | null, number]>;
const reading = (keys: Keys, uptimeSeconds = 3_600): MasterReading => ({
  keys: new Map(Object.entries(keys).map(([key, [value, expireTimeMs]]) => [key, { value, expireTimeMs }])),
  runId: 'a'.repeat(40),
  uptimeSeconds,
  receivedAtMs: Date.now(),
});
const read = (label: string, keys: Record<string, [string | null, number]>): MasterView => ({ label, state: 'read', reading: reading(keys) });
const unknown = (label: string): MasterView => ({ label, state: 'unknown' });
const belief = (atMs: number, expirationMs: number, isValid = true): Belief => ({ atMs, expirationMs, valid: isValid });

describe('the quorum bound', () => {
  it('is the q-th smallest expiry: the instant q masters are free', () => {
    expect(quorumBoundMs([500, 100, -Infinity, 300, 200], 3)).toBe(200);
    expect(quorumBoundMs([-Infinity, -Infinity, 100, 100, 100], 3)).toBe(100);
    expect(quorumBoundMs([-Infinity, -Infinity, -Infinity, 100, 100], 3)).toBe(-Infinity);
    expect(quorumBoundMs([Infinity, Infinity, Infinity, 100, 100], 3)).toBe(Infinity);
    expect(quorumBoundMs([100, 200, 300, 400, 500], 5)).toBe(500);
  });

  it("a key counts only with the lock's value: another value, none, or no key is already free; −1 never expires", () => {
    const value = 'mine';
    const view = read('m', { a: [value, 1_000], b: ['other', 5_000], c: [null, -2], d: [value, -1] });
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => keyExpiryMs(view, key, value))).toEqual([1_000, -Infinity, -Infinity, Infinity, -Infinity]);
    expect(keyExpiryMs(unknown('m'), 'a', value)).toBe(Infinity);
  });

  it("a read hold counts until its own deadline among the key's readers, or the key's expiry if sooner", () => {
    const readers = (entries: Record<string, number>, expireTimeMs: number): MasterView => ({
      label: 'm',
      state: 'read',
      reading: { ...reading({}), keys: new Map([['r', { value: null, expireTimeMs, readers: new Map(Object.entries(entries)) }]]) },
    });
    expect(keyExpiryMs(readers({ mine: 1_000, other: 3_000 }, 3_000), 'r', 'mine')).toBe(1_000);
    expect(keyExpiryMs(readers({ other: 3_000 }, 3_000), 'r', 'mine')).toBe(-Infinity);
    expect(keyExpiryMs(readers({ mine: 4_000 }, 3_000), 'r', 'mine')).toBe(3_000);
  });

  it("a lock's bound is its earliest resource's: another client needs a quorum free of only one", () => {
    const value = 'v'.repeat(32);
    const masters = MASTERS.map((label, i) => read(label, { a: [value, 1_000 + i], b: [i < 2 ? null : value, 2_000] }));
    expect(lockBoundMs({ resources: ['a', 'b'], value, quorum: 3 }, masters)).toBe(1_002);
    const lost = MASTERS.map((label, i) => read(label, { a: [value, 1_000], b: [i < 3 ? null : value, 2_000] }));
    expect(lockBoundMs({ resources: ['a', 'b'], value, quorum: 3 }, lost)).toBe(-Infinity);
  });
});

describe('the validity verdict', () => {
  const held = lock();
  const masters = (expiries: readonly number[]): MasterView[] =>
    MASTERS.map((label, i) => (Number.isNaN(expiries[i]) ? unknown(label) : read(label, { r: [held.value, expiries[i]!] })));

  it('passes a lock whose expiration is within the bound, and flags one past it with the master table', () => {
    expect(judgeValidity(held, belief(0, 900), belief(10, 900), masters([1_000, 1_000, 1_000, -2, -2]))).toEqual({ verdict: 'full', boundMs: 1_000 });
    const result = judgeValidity(held, belief(0, 1_200), belief(10, 1_200), masters([1_000, 1_000, 1_000, 5_000, 5_000]));
    expect(result.verdict).toBe('full');
    expect(result.violation).toMatch(/believed valid until .*1200.*exceeds the bound by 200 ms/s);
    expect(result.violation).toMatch(/127\.0\.0\.1:1: r: this lock, pexpiretime 1000 \(-200 ms vs expiration\)/);
  });

  it('takes the lower of the two expirations: an extend during the read may lower it first', () => {
    expect(judgeValidity(held, belief(0, 2_000), belief(10, 900), masters([1_000, 1_000, 1_000, -2, -2])).violation).toBeUndefined();
    expect(judgeValidity(held, belief(0, 900), belief(10, 2_000), masters([1_000, 1_000, 1_000, -2, -2])).violation).toBeUndefined();
  });

  it('does not judge a lock invalid at either end of the read, or a read that ended past the expiration', () => {
    const broken = masters([-2, -2, -2, -2, -2]);
    expect(judgeValidity(held, belief(0, 900, false), belief(10, 900), broken)).toEqual({ verdict: 'skipped' });
    expect(judgeValidity(held, belief(0, 900), belief(10, 900, false), broken)).toEqual({ verdict: 'skipped' });
    expect(judgeValidity(held, belief(0, 900), belief(900, 900), broken)).toEqual({ verdict: 'skipped' });
    expect(judgeValidity(held, belief(0, 900), belief(899, 900), broken).violation).toBeDefined();
  });

  it('counts a master without an answer as holding forever, and the check as partial', () => {
    expect(judgeValidity(held, belief(0, 1_200), belief(10, 1_200), masters([1_000, 1_000, NaN, NaN, 5_000]))).toEqual({
      verdict: 'partial',
      boundMs: 5_000,
    });
    expect(judgeValidity(held, belief(0, 1_200), belief(10, 1_200), masters([-2, -2, -2, NaN, NaN])).violation).toMatch(/do not hold it/);
  });
});

describe('the exclusion check', () => {
  const now = Date.now();

  it('flags a holder of a shared resource that is still valid when another lock is acquired', () => {
    const a = lock({ value: 'a'.repeat(32), resources: ['r', 's'] });
    const b = lock({ value: 'b'.repeat(32), resources: ['s'] });
    expect(exclusionViolations(b, [a, b], now)).toEqual([expect.stringMatching(/two holders of s: lock bbbbbbbb… was acquired .* while lock aaaaaaaa… is still valid/)]);
  });

  it('ignores views of the same holder, ended holders, other resources, other masters and quorums that need not meet', () => {
    const b = lock({ value: 'b'.repeat(32) });
    const others = [
      lock({ value: b.value, reentered: true }),
      lock({ value: 'c'.repeat(32), released: true }),
      lock({ value: 'd'.repeat(32), aborted: true }),
      lock({ value: 'e'.repeat(32), expiration: now - 1 }),
      lock({ value: 'f'.repeat(32), resources: ['other'] }),
      lock({ value: 'g'.repeat(32), masters: MASTERS.slice(0, 3) }),
      lock({ value: 'h'.repeat(32), quorum: 2 }),
    ];
    expect(exclusionViolations(b, others, now)).toEqual([]);
  });

  it('lets readers overlap, but flags a reader beside a writer either way round', () => {
    const reader = lock({ value: 'a'.repeat(32), lease: { type: 'read' } });
    const otherReader = lock({ value: 'b'.repeat(32), lease: { type: 'read' } });
    const writer = lock({ value: 'c'.repeat(32) });
    expect(exclusionViolations(otherReader, [reader], now)).toEqual([]);
    expect(exclusionViolations(writer, [reader], now)).toHaveLength(1);
    expect(exclusionViolations(otherReader, [writer], now)).toHaveLength(1);
  });

  it("counts a semaphore's valid permits whatever slot each holds, and flags one past its limit", () => {
    const permit = (value: string, slot: number, semaphore = 'pool'): ObservedLock =>
      lock({ value: value.repeat(32), resources: [`${semaphore}:redlock-permit:${slot}`], lease: { type: 'permit', semaphore, limit: 2, slot } });
    const [a, b, c] = [permit('a', 0), permit('b', 1), permit('c', 2)];
    expect(exclusionViolations(b, [a], now)).toEqual([]);
    expect(exclusionViolations(permit('d', 0, 'other'), [a, b], now)).toEqual([]);
    expect(exclusionViolations(c, [a, b], now)).toEqual([expect.stringMatching(/^3 valid permits of semaphore pool \(limit 2\)/)]);
  });

  it('compares masters by the real master, through proxy aliases', () => {
    const viaProxy = lock({ value: 'a'.repeat(32), masters: MASTERS.map((label) => label.replace('127.0.0.1:', '127.0.0.1:9')) });
    const direct = lock({ value: 'b'.repeat(32) });
    const resolve = (label: string): string => label.replace('127.0.0.1:9', '127.0.0.1:');
    expect(exclusionViolations(direct, [viaProxy], now)).toEqual([]);
    expect(exclusionViolations(direct, [viaProxy], now, resolve)).toHaveLength(1);
  });
});

describe('SafetyOracle', () => {
  /** Masters as a map label → keys, read instantly; `runs` gives each master's run id and uptime. */
  function reader(state: Map<string, Record<string, [string | null, number]>>, runs = new Map<string, [string, number]>()): KeyReader {
    return {
      read: (label) => {
        const [runId, uptimeSeconds] = runs.get(label) ?? ['a'.repeat(40), 3_600];
        return Promise.resolve({ ...reading(state.get(label) ?? {}), runId, uptimeSeconds });
      },
      firstSeenMs: () => undefined,
      resolve: (label) => label,
    };
  }

  it('tracks acquired locks, sweeps them and reports a lock whose keys a quorum lost', async () => {
    const violations: string[] = [];
    const held = lock({ expiration: Date.now() + 5_000 });
    const state = new Map<string, Keys>(MASTERS.map((label) => [label, { r: [held.value, Date.now() + 6_000] }]));
    const oracle = new SafetyOracle(reader(state), (violation) => violations.push(violation));
    oracle.acquired(held);
    await oracle.settle();
    expect(oracle.counts).toMatchObject({ full: 1, exclusion: 1, violations: 0 });
    for (const label of MASTERS.slice(0, 3)) state.set(label, {});
    await oracle.sweep();
    expect(violations).toEqual([expect.stringMatching(/do not hold it/)]);
  });

  it('does not judge masters that restarted since the lock was acquired (their uptime is younger than the lock)', async () => {
    const violations: string[] = [];
    const held = lock({ expiration: Date.now() + 5_000 });
    const state = new Map<string, Keys>(MASTERS.map((label, i): [string, Keys] => [label, i < 3 ? {} : { r: [held.value, Date.now() + 6_000] }]));
    const runs = new Map(MASTERS.slice(0, 3).map((label) => [label, ['b'.repeat(40), 0] as [string, number]]));
    const oracle = new SafetyOracle(reader(state, runs), (violation) => violations.push(violation));
    oracle.track(held, Date.now() - 2_000);
    await oracle.sweep();
    expect(violations).toEqual([]);
    expect(oracle.counts.partial).toBe(1);
  });

  it('reports a re-entered view still valid when its holder is released, and drops ended locks', () => {
    const violations: string[] = [];
    const oracle = new SafetyOracle(reader(new Map()), (violation) => violations.push(violation));
    const outer = lock();
    const view = lock({ reentered: true });
    oracle.track(outer);
    oracle.track(view);
    oracle.released(outer, true);
    expect(violations).toEqual([expect.stringMatching(/\(re-entered\) on r is still valid .* after its holder was released/)]);
    expect(oracle.live).toEqual([view]);
  });
});
