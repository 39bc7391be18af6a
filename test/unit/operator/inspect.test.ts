import { describe, expect, it } from 'vitest';
import { readingOf, summarize, type MasterReading } from '../../../src/operator/inspect.js';
import { operatorSettings } from '../../../src/operator/every-master.js';

const A = 'aaaaaaaa000000000000000000000000';
const B = 'bbbbbbbb000000000000000000000000';
const held = (value: string, receivedAtMs: number, pttlMs: number, fenceCounter?: number): MasterReading => ({
  state: 'held',
  value,
  receivedAtMs,
  pttlMs,
  ...(fenceCounter === undefined ? {} : { fenceCounter }),
});
const free: MasterReading = { state: 'free' };
const down: MasterReading = { state: 'unavailable' };

describe('the quorum summary of an inspection', () => {
  it('held on every master: validUntil is the quorum-th latest expiry (answer time + PTTL)', () => {
    // Expiries 1_000_900, 1_001_000, 1_000_500, 1_000_700, 1_000_950: the third latest is 1_000_900.
    const readings = [held(A, 1_000_000, 900), held(A, 1_000_010, 990), held(A, 1_000_000, 500), held(A, 1_000_020, 680), held(A, 1_000_000, 950)];
    expect(summarize(readings, 3)).toEqual({ heldByQuorum: true, heldAs: 'exclusive', holder: 'aaaaaaaa', heldOn: 5, validUntil: 1_000_900 });
    // With quorum 5, the earliest expiry decides.
    expect(summarize(readings, 5).validUntil).toBe(1_000_500);
  });

  it('a quorum exactly, the others free or down: the quorum-th latest of the holding masters', () => {
    const readings = [held(A, 2_000, 100), free, held(A, 2_000, 300), down, held(A, 2_000, 200)];
    expect(summarize(readings, 3)).toEqual({ heldByQuorum: true, heldAs: 'exclusive', holder: 'aaaaaaaa', heldOn: 3, validUntil: 2_100 });
  });

  it('split between two holders: no quorum; the holder on the most masters is named', () => {
    const readings = [held(A, 0, 100), held(B, 0, 100), held(B, 0, 100), free, down];
    expect(summarize(readings, 3)).toEqual({ heldByQuorum: false, heldAs: 'exclusive', holder: 'bbbbbbbb', heldOn: 2 });
  });

  it('readers on a quorum of masters hold it as "read", whoever the readers are', () => {
    const read = (pttlMs: number): MasterReading => ({ state: 'read', receivedAtMs: 10_000, pttlMs });
    expect(summarize([read(4_000), read(6_000), free], 2)).toEqual({ heldByQuorum: true, heldAs: 'read', heldOn: 2, validUntil: 14_000 });
    expect(summarize([read(4_000), free, free], 2)).toEqual({ heldByQuorum: false, heldAs: 'read', heldOn: 1 });
  });

  it('free everywhere: nothing held; the fence counter is the largest any master has', () => {
    expect(summarize([free, free, free], 2)).toEqual({ heldByQuorum: false, heldOn: 0 });
    const fenced = [{ state: 'free', fenceCounter: 7 }, { state: 'free', fenceCounter: 9 }, down] as const;
    expect(summarize(fenced, 2)).toEqual({ heldByQuorum: false, heldOn: 0, fenceCounter: 9 });
    expect(summarize([held(A, 0, 100, 4), held(A, 0, 100, 5), down], 2)).toMatchObject({ fenceCounter: 5, validUntil: 100 });
  });

  it('keys without expiry on a quorum: held, with no validUntil', () => {
    expect(summarize([held(A, 0, -1), held(A, 0, -1), held(A, 0, 100)], 2)).toEqual({ heldByQuorum: true, heldAs: 'exclusive', holder: 'aaaaaaaa', heldOn: 3 });
    // One key without expiry and one with: the quorum-th latest is the one that expires.
    expect(summarize([held(A, 0, -1), held(A, 0, 100), free], 2).validUntil).toBe(100);
  });

  it('a snapshot reads as a master state: free, held, read (live readers only), other (a sorted set not of read holds too)', () => {
    const snapshot = { type: 'none', value: '', pttlMs: -2, readers: 0, fence: '', queued: 0, fingerprint: 'free' };
    expect(readingOf(snapshot, 5)).toEqual({ state: 'free' });
    expect(readingOf({ ...snapshot, type: 'string', value: A, pttlMs: 800, fence: '12' }, 5)).toEqual({
      state: 'held', value: A, pttlMs: 800, receivedAtMs: 5, fenceCounter: 12,
    });
    expect(readingOf({ ...snapshot, type: 'read', pttlMs: 800, readers: 2 }, 5)).toEqual({ state: 'read', pttlMs: 800, receivedAtMs: 5 });
    expect(readingOf({ ...snapshot, type: 'read', pttlMs: 800, readers: 0 }, 5)).toEqual({ state: 'free' });
    expect(readingOf({ ...snapshot, type: 'zset', pttlMs: -1 }, 5)).toEqual({ state: 'other', pttlMs: -1, receivedAtMs: 5 });
    expect(readingOf({ ...snapshot, type: 'hash', pttlMs: -1 }, 5)).toEqual({ state: 'other', pttlMs: -1, receivedAtMs: 5 });
  });

  it('options: the call\'s nodeTimeout, else the constructor\'s, else 500 ms; bad ones are TypeErrors or RangeErrors', () => {
    expect(operatorSettings(undefined, undefined)).toEqual({ nodeTimeoutMs: 500 });
    expect(operatorSettings(undefined, 120)).toEqual({ nodeTimeoutMs: 120 });
    expect(operatorSettings({ nodeTimeout: 80 }, 120)).toEqual({ nodeTimeoutMs: 80 });
    expect(() => operatorSettings({ nodeTimeout: Infinity }, undefined)).toThrow(RangeError);
    expect(() => operatorSettings(null, undefined)).toThrow(TypeError);
    expect(() => operatorSettings({ retries: 1 }, undefined)).toThrow(/unknown option 'retries'/);
  });
});
