/**
 * The chaos run's liveness watch (chaos/liveness.ts), on made-up samples of the lines and acquires.
 */
import { describe, expect, it } from 'vitest';
import { checkLiveness, graces, type AcquireReport, type CutReport, type LineSample, type StallReport } from '../../chaos/liveness.js';
import { realMs } from '../../chaos/clock-offset.js';

const settings = { quorum: 3, ticketTtlMs: 300, retrySleepMs: 100, maxSampleGapMs: 100, minSamples: 5 };

/** Samples every 20 ms over [fromMs, toMs): `line(atMs)` says each resource's state at that instant. */
function sampled(
  fromMs: number,
  toMs: number,
  line: (atMs: number) => Record<string, { freeOn: number; queuedOn: number }>,
  answered: (atMs: number) => number = () => 5,
): LineSample[] {
  const samples: LineSample[] = [];
  for (let atMs = fromMs; atMs < toMs; atMs += 20) {
    samples.push({ atMs, rttMs: 2, answered: answered(atMs), lines: new Map(Object.entries(line(atMs))) });
  }
  return samples;
}
const acquire = (worker: number, resources: string[], startMs: number, endMs: number, outcome: AcquireReport['outcome'] = 'acquired'): AcquireReport => ({
  worker,
  resources,
  startMs,
  endMs,
  outcome,
});
const free = { freeOn: 5, queuedOn: 1 };
const held = { freeOn: 0, queuedOn: 1 };

describe('chaos liveness watch', () => {
  it('flags a resource free on a quorum with a live waiter in its line past a ticket ttl + a round trip (hold-and-wait)', () => {
    // Worker 0 holds a and asks for b; worker 1 asks [a, b] and stands in b's line: b stays free for 1 s.
    const samples = sampled(0, 1_200, (atMs) => ({ a: held, b: atMs >= 100 && atMs < 1_100 ? free : { freeOn: 0, queuedOn: 0 } }));
    const acquires = [acquire(0, ['b'], 100, 1_150, 'gave-up'), acquire(1, ['a', 'b'], 50, 1_200)];
    const verdict = checkLiveness(samples, acquires, [], settings);
    expect(verdict.violations).toEqual([
      { resource: 'b', message: expect.stringMatching(/^b was free on a quorum \(5 of 5 answering\) with a live ticket in its line and a waiter that could take it for 980 ms .*bound: ticket ttl 300 ms \+ a 2 ms round trip/) as unknown },
      { resource: 'b', message: expect.stringMatching(/^worker 0's acquire of \[b\] .* gave up while free on a quorum in 50 of its 53 samples$/) as unknown },
    ]);
    expect(verdict).toMatchObject({ stalledIntervals: 1, longestStalledMs: 980, gaveUp: 1 });
  });

  it("names a violation's line heads by worker ('^': reserving), as they change, and the workers not running near it", () => {
    const heads = (atMs: number): string[] => ['300-aa.1^', '300-aa.1', atMs < 300 ? '300-bb.2' : '', '', ''];
    const samples = sampled(0, 600, () => ({ b: free })).map((sample) => ({
      ...sample,
      lines: new Map([['b', { ...free, heads: heads(sample.atMs) }]]),
    }));
    const owner = (ticket: string): number | undefined => ({ '300-aa.1': 3, '300-bb.2': 1 })[ticket];
    const verdict = checkLiveness(samples, [acquire(2, ['b'], 0, 600)], [{ worker: 3, startMs: 100, endMs: 180 }], { ...settings, owner });
    expect(verdict.violations).toEqual([
      {
        resource: 'b',
        message: expect.stringMatching(/; heads: m0 w3\^ m1 w3 m2 w1 m3 - m4 - → m0 w3\^ m1 w3 m2 - m3 - m4 -; not running \(with a retry sleep after\) in the ttl before and during it: worker 3 180 ms$/) as unknown,
      },
    ]);
  });

  it('passes a free line with a waiter for less than a ticket ttl + a round trip, and one that no live acquire waits in', () => {
    const brief = sampled(0, 1_000, (atMs) => ({ b: atMs >= 200 && atMs < 480 ? free : held }));
    expect(checkLiveness(brief, [acquire(1, ['b'], 0, 500)], [], settings)).toMatchObject({ violations: [], stalledIntervals: 1, longestStalledMs: 260 });
    // A ticket left in the line by no acquire in progress (a holder's, a dead waiter's): not a waiter.
    const long = sampled(0, 1_000, () => ({ b: free }));
    expect(checkLiveness(long, [acquire(1, ['b'], 0, 10), acquire(2, ['b'], 990, 1_000)], [], settings).violations).toEqual([]);
    // A waiter on [a, b] while a is held, in no line of b (the line is empty): b free is no stall.
    const noLine = sampled(0, 1_000, () => ({ a: held, b: { freeOn: 5, queuedOn: 0 } }));
    expect(checkLiveness(noLine, [acquire(1, ['a', 'b'], 0, 1_000, 'gave-up')], [], settings).violations).toEqual([]);
    // Waiters for [a, b] while a is held, tickets in b's line (on the masters where b was held when
    // they were refused): they wait for a, not for b's line; nobody who could take b waits.
    const forA = sampled(0, 1_000, () => ({ a: held, b: free }));
    expect(checkLiveness(forA, [acquire(1, ['a', 'b'], 0, 1_000), acquire(2, ['a', 'b'], 0, 1_000)], [], settings)).toMatchObject({ violations: [], stalledIntervals: 0 });
    // The same line, and one waiter for b alone: it could take b, and the line keeps it out.
    expect(checkLiveness(forA, [acquire(1, ['a', 'b'], 0, 1_000), acquire(3, ['b'], 0, 1_000)], [], settings).violations).toHaveLength(1);
  });

  it('ends a stall where someone was granted the resource between two samples: the line moved (the 10-minute run of 079907f)', () => {
    // Nested waiters for b one after another, each kept out by a reservation for 150 ms and then
    // granted b for a section shorter than the sampling, beside a waiter for [a, b] that could take
    // both in between: every sample finds a and b free, a ticket in b's line, someone ready.
    const samples = sampled(0, 1_000, () => ({ a: { freeOn: 5, queuedOn: 0 }, b: free }));
    const waits = [acquire(0, ['b'], 100, 250), acquire(1, ['b'], 270, 420), acquire(2, ['b'], 440, 590), acquire(3, ['a', 'b'], 90, 610)];
    expect(checkLiveness(samples, waits, [], settings)).toMatchObject({ violations: [], stalledIntervals: 4, longestStalledMs: 160 });
    // One waiter kept out as long: a stall.
    expect(checkLiveness(samples, [acquire(0, ['b'], 100, 590)], [], settings).violations).toHaveLength(1);
    // A grant of another resource moves nothing of b's line.
    expect(checkLiveness(samples, [acquire(0, ['b'], 100, 590), acquire(1, ['c'], 200, 300)], [], settings).violations).toHaveLength(1);
  });

  it('adds the slower of the sampler\'s round trip and the waiters\' granting attempts to the bound', () => {
    // Free with a ticket in line for 320 ms (the place ahead lapsing, then the next one's attempt).
    const lapse = sampled(0, 1_000, (atMs) => ({ b: atMs >= 100 && atMs <= 420 ? free : held }));
    const slowAttempt = { ...acquire(1, ['b'], 0, 460), attemptMs: 24.2 };
    expect(checkLiveness(lapse, [slowAttempt], [], settings).violations).toEqual([]);
    const quickAttempt = { ...acquire(1, ['b'], 0, 460), attemptMs: 3 };
    expect(checkLiveness(lapse, [quickAttempt], [], settings).violations).toEqual([
      { resource: 'b', message: expect.stringContaining('bound: ticket ttl 300 ms + a 3 ms round trip') as unknown },
    ]);
  });

  it('does not expect a waiter to take what a partition cuts it from', () => {
    // b free on masters 0, 1 and 2 (held on 3 and 4) for 1 s, a ticket in its line, one waiter.
    const samples = sampled(0, 1_000, () => ({ b: { freeOn: 3, freeMask: 0b00111, queuedOn: 1 } }));
    const waiter = acquire(1, ['b'], 0, 1_000, 'gave-up');
    // Cut from master 2 (and 3): it reaches two of the free masters, no quorum.
    const cut = [{ worker: 1, masters: [2, 3], startMs: 0, endMs: 1_000 }];
    expect(checkLiveness(samples, [waiter], [], settings, cut)).toMatchObject({ violations: [], stalledIntervals: 0 });
    // Cut from masters 3 and 4 only (where b is held anyway): it could take b, and did not.
    const elsewhere = [{ worker: 1, masters: [3, 4], startMs: 0, endMs: 1_000 }];
    expect(checkLiveness(samples, [waiter], [], settings, elsewhere).violations).toHaveLength(2);
  });

  it('does not expect a waiter to count a master its restart guard withholds (the seed 834716698 stall)', () => {
    // Master 4 restarted; master 2 keeps b after a reset cut its release (the waiter's ticket in line
    // there); master 3 is down. b is free on 0, 1 and 4 for 600 ms: a quorum only with master 4, whose
    // vote the waiter's restart guard withholds until 500 ms.
    const samples = sampled(0, 600, () => ({ b: { freeOn: 3, freeMask: 0b10011, queuedOn: 1 } }), () => 4);
    const waiter = acquire(1, ['b'], 0, 600);
    const withheld = graces(1, [{}, {}, {}, {}, { withheld: { reason: 'grace', waitMs: 500 } }], 0, 0, []);
    expect(withheld).toEqual([{ worker: 1, masters: [4], startMs: 0, endMs: 500 }]);
    expect(checkLiveness(samples, [waiter], [], settings, withheld)).toMatchObject({ violations: [], stalledIntervals: 1, longestStalledMs: 60 });
    // Not told of the grace, the watch blames the line.
    expect(checkLiveness(samples, [waiter], [], settings).violations).toHaveLength(1);
  });

  it('reports each restart guard\'s grace once, and no other withheld vote', () => {
    const reported: number[] = [];
    const grace = (waitMs: number) => ({ withheld: { reason: 'grace', waitMs } });
    expect(graces(2, [grace(1_500), {}], 990, 1_000, reported)).toEqual<CutReport[]>([{ worker: 2, masters: [0], startMs: 990, endMs: 2_500 }]);
    // The same grace read again, 10 ms on (its end off by the reading's timing): nothing new.
    expect(graces(2, [grace(1_492), {}], 1_000, 1_010, reported)).toEqual([]);
    // A later restart of the same master: a new grace.
    expect(graces(2, [grace(1_500), {}], 2_990, 3_000, reported)).toEqual([{ worker: 2, masters: [0], startMs: 2_990, endMs: 4_500 }]);
    // A clock jump's (reported apart) and an unchecked master's (the reconnect's, judged): none.
    const others = [{ withheld: { reason: 'clock-jump', waitMs: 1_500 } }, { withheld: { reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY } }];
    expect(graces(2, others, 0, 10, [])).toEqual([]);
  });

  it('counts only masters that answered, and judges nothing while fewer than a quorum answered', () => {
    // Free on 2 of the 3 answering: not on a quorum.
    const two = sampled(0, 1_000, () => ({ b: { freeOn: 2, queuedOn: 1 } }), () => 3);
    expect(checkLiveness(two, [acquire(1, ['b'], 0, 1_000, 'gave-up')], [], settings).violations).toEqual([]);
    // Free on all answering, but only 2 answered (3 paused): the sampler cannot see a quorum.
    const blind = sampled(0, 1_000, () => ({ b: { freeOn: 2, queuedOn: 1 } }), () => 2);
    expect(checkLiveness(blind, [acquire(1, ['b'], 0, 1_000, 'gave-up')], [], settings)).toMatchObject({ violations: [], visibleSamples: 0 });
    // Blind every 200 ms: the stalled intervals are cut short of the bound.
    const flickering = sampled(0, 1_000, () => ({ b: free }), (atMs) => (atMs % 200 === 0 ? 2 : 5));
    expect(checkLiveness(flickering, [acquire(1, ['b'], 0, 1_000)], [], settings).violations).toEqual([]);
  });

  it('does not flag while a waiter on the resource was not running, nor for a retry sleep after it resumed', () => {
    const samples = sampled(0, 1_500, () => ({ b: free }));
    const acquires = [acquire(0, ['b'], 0, 1_500), acquire(1, ['b'], 0, 1_500)];
    // Worker 0 paused 0–700 ms, then stalled 900–1 200: what is left is under the bound.
    const stalls: StallReport[] = [
      { worker: 0, startMs: 0, endMs: 700 },
      { worker: 0, startMs: 900, endMs: 1_200 },
    ];
    expect(checkLiveness(samples, acquires, stalls, settings).violations).toEqual([]);
    // Without the stalls the same history is flagged.
    expect(checkLiveness(samples, acquires, [], settings).violations).toHaveLength(1);
  });

  it('does not join samples across a gap in the sampling (the sampler stalled)', () => {
    const samples = [...sampled(0, 250, () => ({ b: free })), ...sampled(500, 750, () => ({ b: free }))];
    expect(checkLiveness(samples, [acquire(1, ['b'], 0, 750)], [], settings)).toMatchObject({ violations: [], stalledIntervals: 2 });
  });

  it('flags an acquire that gave up while its resources were free on a quorum most of its wait, not one that waited on a holder', () => {
    // Nothing in the lines (a waiter that never joined), but free all along: it should have been granted.
    const freeNoLine = sampled(0, 1_000, () => ({ a: { freeOn: 4, queuedOn: 0 }, b: { freeOn: 5, queuedOn: 0 } }));
    expect(checkLiveness(freeNoLine, [acquire(1, ['a', 'b'], 0, 1_000, 'gave-up')], [], settings).violations).toEqual([
      { resource: 'a', message: expect.stringMatching(/gave up while free on a quorum in 50 of its 50 samples/) as unknown },
    ]);
    // a held for most of the wait: giving up on [a, b] is no liveness failure.
    const mostlyHeld = sampled(0, 1_000, (atMs) => ({ a: atMs < 600 ? held : { freeOn: 5, queuedOn: 0 }, b: { freeOn: 5, queuedOn: 0 } }));
    expect(checkLiveness(mostlyHeld, [acquire(1, ['a', 'b'], 0, 1_000, 'gave-up')], [], settings).violations).toEqual([]);
    // Too short a wait to judge (fewer samples than minSamples).
    expect(checkLiveness(freeNoLine, [acquire(1, ['a', 'b'], 0, 60, 'gave-up')], [], settings).violations).toEqual([]);
  });

  it('flags a nested read that gave up while its outer read hold was valid', () => {
    const nested: AcquireReport = { ...acquire(2, ['rw'], 0, 1_800, 'gave-up'), outerValid: true };
    expect(checkLiveness([], [nested], [], settings).violations).toEqual([
      { resource: 'rw', message: expect.stringMatching(/worker 2's acquire of \[rw\] .* a read nested in a valid read hold of the same name, waited and gave up/) as unknown },
    ]);
    expect(checkLiveness([], [{ ...nested, outerValid: false }], [], settings).violations).toEqual([]);
  });

  it('converts a clock-offset worker\'s instants to real time', () => {
    expect(realMs(1_000_000 - 600_000, -600_000)).toBe(1_000_000);
    expect(realMs(1_000_000 + 5_000, 5_000)).toBe(1_000_000);
  });
});
