import { describe, expect, it } from 'vitest';
import { MasterClock, medianOf } from '../../../src/acquisition/master-clock.js';
import { encodeBatch, withoutKeyPrefix, type LockOperation } from '../../../src/script/codec.js';

describe('MasterClock', () => {
  it('places an acquire at its monotonic start plus the median offset; nothing before a reading', async () => {
    let nowMs = 1_000;
    const clock = new MasterClock(() => nowMs, 60_000);
    expect(clock.placeOf(900)).toBeUndefined();
    expect(clock.stale).toBe(true);
    // Five masters: one wildly ahead and one wildly behind do not move the median.
    await clock.sample(() => Promise.resolve([5_000, 5_002, 5_001, 9_999_999, -9_999_999]));
    expect(clock.placeOf(900)).toBe(5_901);
    expect(clock.stale).toBe(false);
    nowMs += 60_000;
    expect(clock.stale).toBe(true);
  });

  it('concurrent readings share one; a reading no master answered keeps the offset and waits for the next refresh', async () => {
    const clock = new MasterClock(() => 0, 60_000);
    let reads = 0;
    const read = (): Promise<number[]> => {
      reads++;
      return Promise.resolve([10]);
    };
    await Promise.all([clock.sample(read), clock.sample(read)]);
    expect(reads).toBe(1);
    await clock.sample(() => Promise.resolve([]));
    expect(clock.placeOf(5)).toBe(15);
    await clock.sample(() => Promise.reject(new Error('every master down')));
    expect(clock.placeOf(5)).toBe(15);
    expect(clock.stale).toBe(false);
  });

  it('medianOf', () => {
    expect(medianOf([])).toBeUndefined();
    expect(medianOf([3])).toBe(3);
    expect(medianOf([4, 1, 3, 2])).toBe(2.5);
  });
});

describe('an acquire on the wire', () => {
  const acquire: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100, ticket: '2500-t1', ageMs: 12.3456, placeMs: 1_700_000_000_000.5 };

  it('carries its ticket, its age and its place (empty when not known), the same alone or in a batch', () => {
    const lone = encodeBatch([acquire], 'tag', undefined, undefined, false, ['EVALSHA', 'sha']);
    expect(lone).toEqual(['EVALSHA', 'sha', '1', 'k', 'a', 'v', '100', '1', '2500-t1', '12.346', '1700000000000.5', '0', 'PUBLISH', 'redlock-quorum:released', 'tag']);
    const batch = encodeBatch([acquire, { ...acquire, keys: ['j'], placeMs: undefined }], 'tag');
    expect(batch).toEqual(['2', 'k', 'j', 'a', 'v', '100', '1', '2500-t1', '12.346', '1700000000000.5', 'a', 'v', '100', '1', '2500-t1', '12.346', '', '0', 'PUBLISH', 'redlock-quorum:released', 'tag']);
  });
});

describe('withoutKeyPrefix', () => {
  it('takes an ioredis keyPrefix off the announced key only, never off the ticket before it', () => {
    expect(withoutKeyPrefix('value::app:doc', 'app:')).toBe('value::doc');
    expect(withoutKeyPrefix('2500-ab1:2500-cd2:1app:doc', '1app:')).toBe('2500-ab1:2500-cd2:doc');
    expect(withoutKeyPrefix('1app-x::1app:doc', '1app')).toBe('1app-x:::doc');
    expect(withoutKeyPrefix('value::doc', 'app:')).toBe('value::doc');
    expect(withoutKeyPrefix('value::app:doc', '')).toBe('value::app:doc');
  });
});
