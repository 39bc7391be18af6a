import { describe, expect, it } from 'vitest';
import { MasterClock, medianOf, type ClockReading } from '../../../src/acquisition/master-clock.js';
import { encodeBatch, withoutKeyPrefix, type LockOperation } from '../../../src/script/codec.js';

/** Each master's offset, read with the same round trip. */
const answers = (offsets: readonly number[], roundTripMs = 1): ClockReading[] => offsets.map((offsetMs) => ({ offsetMs, roundTripMs }));

describe('MasterClock', () => {
  it('reads again a second after a reading that gave no place, not at every wait', async () => {
    let nowMs = 0;
    const clock = new MasterClock(() => nowMs, 3);
    // No agreeing majority (one wild clock of the two that answered), then no answer at all.
    await clock.sample(() => Promise.resolve(answers([1_000, 61_000])));
    expect(clock.placeOf(0)).toBeUndefined();
    nowMs += 500;
    expect(clock.stale).toBe(false);
    nowMs += 500;
    expect(clock.stale).toBe(true);
    await clock.sample(() => Promise.resolve([]));
    nowMs += 999;
    expect(clock.stale).toBe(false);
    nowMs += 1;
    expect(clock.stale).toBe(true);
  });

  it('places an acquire at its monotonic start plus the median offset; nothing before a reading', async () => {
    let nowMs = 1_000;
    const clock = new MasterClock(() => nowMs, 5);
    expect(clock.placeOf(900)).toBeUndefined();
    expect(clock.stale).toBe(true);
    // Five masters: one wildly ahead and one wildly behind do not move the median.
    await clock.sample(() => Promise.resolve(answers([5_000, 5_002, 5_001, 9_999_999, -9_999_999])));
    expect(clock.placeOf(900)).toBe(5_901);
    expect(clock.stale).toBe(false);
    nowMs += 60_000;
    expect(clock.stale).toBe(true);
  });

  it('keeps the tightest reading: one taken while the event loop stalled does not move the place', async () => {
    let nowMs = 0;
    const clock = new MasterClock(() => nowMs, 3);
    await clock.sample(() => Promise.resolve(answers([1_000, 1_000, 1_001], 0.4)));
    // The first readings are followed up a second later, tight or not.
    nowMs += 999;
    expect(clock.stale).toBe(false);
    nowMs += 1;
    expect(clock.stale).toBe(true);
    // A reading whose replies waited 120 ms in a busy event loop: its midpoint is 60 ms late.
    await clock.sample(() => Promise.resolve(answers([940, 940, 941], 120)));
    expect(clock.placeOf(0)).toBe(1_000);
    nowMs += 1_000;
    await clock.sample(() => Promise.resolve(answers([1_000.2, 1_000.2, 1_000.2], 0.3)));
    expect(clock.placeOf(0)).toBe(1_000.2);
    // Past the first readings, a tight one is renewed only after refreshMs.
    nowMs += 1_000;
    expect(clock.stale).toBe(false);
    nowMs += 59_000;
    expect(clock.stale).toBe(true);
  });

  it('follows a loose first reading up every second until one is tight, and renews an old one whatever its bound', async () => {
    let nowMs = 0;
    const clock = new MasterClock(() => nowMs, 1);
    await clock.sample(() => Promise.resolve(answers([500], 200)));
    expect(clock.placeOf(0)).toBe(500);
    for (let reading = 1; reading < 3; reading++) {
      nowMs += 1_000;
      expect(clock.stale).toBe(true);
      await clock.sample(() => Promise.resolve(answers([450], 210)));
    }
    // Still the first (no tighter came), and after the first three no longer followed up: 200 ms is this network's floor.
    expect(clock.placeOf(0)).toBe(500);
    nowMs += 1_000;
    expect(clock.stale).toBe(false);
    await clock.sample(() => Promise.resolve(answers([401], 2)));
    expect(clock.placeOf(0)).toBe(401);
    // Now the floor is 1 ms: a 200 ms reading is loose, kept out, and followed up.
    nowMs += 60_000;
    await clock.sample(() => Promise.resolve(answers([300], 200)));
    expect(clock.placeOf(0)).toBe(300); // the kept one was older than refreshMs
    nowMs += 1_000;
    expect(clock.stale).toBe(true);
  });

  it('concurrent readings share one; a reading no master answered keeps the offset and waits for the next refresh', async () => {
    const clock = new MasterClock(() => 0, 1);
    let reads = 0;
    const read = (): Promise<ClockReading[]> => {
      reads++;
      return Promise.resolve(answers([10]));
    };
    await Promise.all([clock.sample(read), clock.sample(read)]);
    expect(reads).toBe(1);
    await clock.sample(() => Promise.resolve([]));
    expect(clock.placeOf(5)).toBe(15);
    await clock.sample(() => Promise.reject(new Error('every master down')));
    expect(clock.placeOf(5)).toBe(15);
  });

  it('takes a place only from a majority of all masters whose clocks agree: two of three answers, one 60 s behind, move nothing', async () => {
    let nowMs = 0;
    const clock = new MasterClock(() => nowMs, 3);
    // Master 1 missed this reading; master 3 is 60 s behind: no two answers agree, so no place.
    await clock.sample(() => Promise.resolve(answers([1_000, -59_000])));
    expect(clock.placeOf(0)).toBeUndefined();
    expect(clock.stale).toBe(false); // read again a second later
    // Two that agree are a majority of three: their median, the wild one left out.
    nowMs += 1_000;
    expect(clock.stale).toBe(true);
    await clock.sample(() => Promise.resolve(answers([1_000, 1_002, -59_000])));
    expect(clock.placeOf(0)).toBe(1_001);
    // Later, with only the healthy master and the wild one answering, the kept place stays.
    nowMs += 1_000;
    await clock.sample(() => Promise.resolve(answers([-59_000, 1_000], 0.1)));
    expect(clock.placeOf(0)).toBe(1_001);
  });

  it('clocks agree within the agreement allowance beyond their round trips; a lone answer of five places nothing', async () => {
    const clock = new MasterClock(() => 0, 5);
    await clock.sample(() => Promise.resolve(answers([1_000])));
    expect(clock.placeOf(0)).toBeUndefined();
    // Two of five agree, not a majority.
    await clock.sample(() => Promise.resolve(answers([1_000, 1_001, 90_000, -90_000])));
    expect(clock.placeOf(0)).toBeUndefined();
    // Three whose readings are 150 ms apart but each read on a 200 ms round trip: they may agree.
    await clock.sample(() => Promise.resolve(answers([1_000, 1_075, 1_150, 90_000], 200)));
    expect(clock.placeOf(0)).toBe(1_075);
  });

  it('medianOf', () => {
    expect(medianOf([])).toBeUndefined();
    expect(medianOf([3])).toBe(3);
    expect(medianOf([4, 1, 3, 2])).toBe(2.5);
  });
});

describe('an acquire on the wire', () => {
  const acquire: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100, fenced: false, ticket: '2500-t1', ageMs: 12.3456, placeMs: 1_700_000_000_000.5 };

  it('carries its ticket, its age and its place (empty when not known), the same alone or in a batch', () => {
    const lone = encodeBatch([acquire], 'tag', undefined, undefined, false, ['EVALSHA', 'sha']);
    expect(lone).toEqual(['EVALSHA', 'sha', '1', 'k', 'a', 'v', '1', '100', '2500-t1', '12.346', '1700000000000.5', '0', 'PUBLISH', 'redlock-quorum:released', 'tag']);
    const batch = encodeBatch([acquire, { ...acquire, keys: ['j'], placeMs: undefined }], 'tag');
    expect(batch).toEqual(['2', 'k', 'j', 'a', 'v', '1', '100', '2500-t1', '12.346', '1700000000000.5', 'a', 'v', '1', '100', '2500-t1', '12.346', '', '0', 'PUBLISH', 'redlock-quorum:released', 'tag']);
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
