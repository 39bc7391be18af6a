/**
 * How long a refused attempt sleeps (src/acquisition/retry.ts): the retry delay, or less when a
 * quorum of masters could grant sooner (a key's ttl, or the place of a waiter ahead lapsing).
 */
import { describe, expect, it } from 'vitest';
import { waitMs } from '../../../src/acquisition/retry.js';
import type { EffectiveSettings } from '../../../src/config/settings.js';
import type { AttemptRecord, NodeOutcome } from '../../../src/protocol/outcomes.js';

/** Five masters, quorum 3, retryDelay 2000 ms without jitter: the fallback is exactly 2000 ms. */
const effective = { quorum: 3, retryDelayMs: 2_000, retryJitterMs: 0 } as EffectiveSettings;

function refused(...outcomes: NodeOutcome[]): AttemptRecord {
  const granted = outcomes.filter((outcome) => outcome.status === 'granted').length;
  return { attempt: 1, outcomes, granted, elapsedMs: 5, validityMs: 0, membershipSize: 5, quorumSize: 3, votesFor: new Set(), votesAgainst: new Map() };
}
const node = 'm';
const locked = (pttlMs: number): NodeOutcome => ({ node, status: 'locked', pttlMs });
const queued = (pttlMs: number): NodeOutcome => ({ node, status: 'queued', pttlMs });
const granted: NodeOutcome = { node, status: 'granted' };
const timedOut: NodeOutcome = { node, status: 'timeout' };

describe('waitMs', () => {
  it('sleeps until the place ahead lapses on a quorum, when that is sooner than the retry delay', () => {
    // A waiter ahead no longer heard from: its place lapses in 120 ms on three masters.
    expect(waitMs(refused(queued(120), queued(100), queued(110), timedOut, timedOut), effective)).toBe(121);
  });

  it('counts the masters that granted (rolled back, free now) towards the quorum', () => {
    expect(waitMs(refused(granted, granted, queued(300), queued(1_500), timedOut), effective)).toBe(301);
  });

  it('the quorum-th soonest, not the latest: a place renewed on a minority does not hold the line', () => {
    // The waiter ahead renews its place where it still reaches (two masters); elsewhere it lapses.
    expect(waitMs(refused(queued(50), queued(60), queued(70), queued(2_050), queued(2_060)), effective)).toBe(71);
  });

  it('a key held longer than the retry delay, an unknown lapse, or too few answers: the retry delay', () => {
    expect(waitMs(refused(locked(30_000), locked(30_000), locked(30_000), locked(30_000), locked(30_000)), effective)).toBe(2_000);
    expect(waitMs(refused(queued(-1), queued(-1), queued(100), queued(100), timedOut), effective)).toBe(2_000);
    expect(waitMs(refused(queued(100), queued(100), timedOut, timedOut, timedOut), effective)).toBe(2_000);
  });

  it('a key that expires sooner, on a quorum: as before, until it has', () => {
    expect(waitMs(refused(locked(400), locked(380), locked(390), locked(410), locked(420)), effective)).toBe(401);
  });

  it('a permit: masters that gave another slot than the leading one are not free for it', () => {
    // Two gave slot 0, two slot 1, one is full (its soonest slot frees in 5 s): no quorum on any slot.
    const slot = (n: number): NodeOutcome => ({ node, status: 'granted', slot: n });
    const record = { ...refused(slot(0), slot(0), slot(1), slot(1), locked(5_000)), granted: 2, slot: 0 };
    expect(waitMs(record, effective)).toBe(2_000);
  });

  it('granted by a quorum but refused for its validity: the retry delay, not at once', () => {
    expect(waitMs(refused(granted, granted, granted, timedOut, timedOut), effective)).toBe(2_000);
  });
});
