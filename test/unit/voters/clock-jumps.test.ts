import { describe, expect, it } from 'vitest';
import { ClockJumpError, MasterRestartedError } from '../../../src/errors.js';
import { ClockJumpDetector, type ClockReading } from '../../../src/voters/master/clock-jumps.js';
import { RestartGuard, parseServerInfo } from '../../../src/voters/master/restart-guard.js';

/** A reading of a master whose clock is `offsetMs` ahead of our monotonic clock, read mid-way of a round trip of `roundTripMs` from `sentAtMs`. */
const reading = (sentAtMs: number, offsetMs: number, roundTripMs = 2): ClockReading => ({
  masterMs: Math.floor(sentAtMs + roundTripMs / 2 + offsetMs),
  sentAtMs,
  receivedAtMs: sentAtMs + roundTripMs,
});

const info = (runId: string, uptime: number): string => `# Server\r\nrun_id:${runId}\r\nuptime_in_seconds:${uptime}\r\n`;

describe('clock-jump detector', () => {
  it('the first reading is a baseline; a clock that keeps its rate is never a jump', () => {
    const detector = new ClockJumpDetector(0.01);
    expect(detector.observe(reading(0, 1_700_000_000_000))).toBeUndefined();
    for (let at = 1_000; at <= 60_000; at += 1_000) expect(detector.observe(reading(at, 1_700_000_000_000))).toBeUndefined();
  });

  it('drift within the allowance is no jump; beyond it is', () => {
    const within = new ClockJumpDetector(0.01);
    within.observe(reading(0, 0));
    // 0.9 % fast over 10 s: 90 ms, under the 100 ms + 2 ms allowed.
    expect(within.observe(reading(10_000, 90))).toBeUndefined();
    const beyond = new ClockJumpDetector(0.01);
    beyond.observe(reading(0, 0));
    expect(beyond.observe(reading(10_000, 150))?.direction).toBe('forward');
  });

  it('a slow round trip or a stalled event loop widens the reading instead of passing for a jump', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    // The answer was read 2 s after the call left (a stalled loop): TIME was read at its start.
    expect(detector.observe({ masterMs: 1_000, sentAtMs: 1_000, receivedAtMs: 3_000 })).toBeUndefined();
    // … or at its end.
    expect(detector.observe({ masterMs: 6_000, sentAtMs: 4_000, receivedAtMs: 6_000 })).toBeUndefined();
  });

  it('a forward jump is seen with at least its size beyond the allowance; a backward one too', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    const forward = detector.observe(reading(1_000, 3_000))!;
    expect(forward.direction).toBe('forward');
    expect(forward.jumpMs).toBeGreaterThan(2_950);
    expect(forward.jumpMs).toBeLessThanOrEqual(3_000);
    // The new clock is the baseline now: steady from there is no jump.
    expect(detector.observe(reading(2_000, 3_000))).toBeUndefined();
    const backward = detector.observe(reading(3_000, 1_000))!;
    expect(backward.direction).toBe('backward');
    expect(backward.jumpMs).toBeGreaterThan(1_950);
  });

  it('a forward jump first read on a slow round trip is still reported by the fast readings after it', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    // +60 ms, first read on a 200 ms round trip: its interval overlaps the old one, so it proves nothing…
    expect(detector.observe(reading(1_000, 60, 200))).toBeUndefined();
    // … and must not hide the jump from the fast readings that follow.
    const seen = Array.from({ length: 40 }, (_, call) => detector.observe(reading(1_300 + call * 10, 60))).filter((jump) => jump !== undefined);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.direction).toBe('forward');
    expect(seen[0]!.jumpMs).toBeGreaterThan(30);
    expect(seen[0]!.jumpMs).toBeLessThanOrEqual(60);
  });

  it('a wide reading narrows nothing it cannot: a steady clock read slow then fast is never a jump', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    // TIME read at either end of a 2 s stall, then fast readings: the clock never moved.
    expect(detector.observe({ masterMs: 1_000, sentAtMs: 1_000, receivedAtMs: 3_000 })).toBeUndefined();
    expect(detector.observe({ masterMs: 6_000, sentAtMs: 4_000, receivedAtMs: 6_000 })).toBeUndefined();
    for (let at = 7_000; at < 8_000; at += 10) expect(detector.observe(reading(at, 0))).toBeUndefined();
  });

  it('a reading sent before the kept one (answered late, on another connection) is ignored', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    detector.observe(reading(2_000, 3_000)); // forward
    expect(detector.observe(reading(1_000, 0))).toBeUndefined();
  });

  it('forget() makes the next reading a new baseline (another server at the address)', () => {
    const detector = new ClockJumpDetector(0.01);
    detector.observe(reading(0, 0));
    detector.forget();
    expect(detector.observe(reading(1_000, 50_000))).toBeUndefined();
  });
});

describe('restart guard with clockJumps', () => {
  const guarded = (): RestartGuard => {
    const guard = new RestartGuard(10_000, { driftFactor: 0.01 });
    guard.observe(parseServerInfo(info('aaaa', 3600))!, 0);
    return guard;
  };

  it('reads the clock only with clockJumps', () => {
    expect(new RestartGuard(10_000).readsClock).toBe(false);
    expect(guarded().readsClock).toBe(true);
    // Without clockJumps a reading is ignored.
    const plain = new RestartGuard(10_000);
    plain.observe(parseServerInfo(info('aaaa', 3600))!, 0);
    plain.clockRead(reading(0, 0), 0);
    expect(plain.clockRead(reading(1_000, 5_000), 1_000)).toBeUndefined();
    expect(plain.waitMs(1_000)).toBe(0);
  });

  it('a forward jump withholds the vote for graceMs from when it was seen, and says why', () => {
    const guard = guarded();
    guard.clockRead(reading(0, 0), 1_000);
    expect(guard.clockRead(reading(1_000, 3_000), 2_000)?.direction).toBe('forward');
    expect(guard.waitMs(2_000)).toBe(10_000);
    const withheld = guard.withheld(5_000)!;
    expect(withheld).toMatchObject({ reason: 'clock-jump', waitMs: 7_000 });
    expect(withheld.jumpMs).toBeGreaterThan(2_950);
    expect(guard.refusal('m:1', 5_000)).toBeInstanceOf(ClockJumpError);
    expect(guard.lastClockJump).toMatchObject({ direction: 'forward', atMs: 2_000 });
    expect(guard.waitMs(12_000)).toBe(0);
    expect(guard.refusal('m:1', 12_000)).toBeUndefined();
  });

  it('a backward jump is reported, the vote kept', () => {
    const guard = guarded();
    guard.clockRead(reading(0, 0), 1_000);
    expect(guard.clockRead(reading(1_000, -3_000), 2_000)?.direction).toBe('backward');
    expect(guard.waitMs(2_000)).toBe(0);
    expect(guard.withheld(2_000)).toBeUndefined();
    expect(guard.lastClockJump).toMatchObject({ direction: 'backward', atMs: 2_000 });
  });

  it("a restart's grace is named before a jump's, and its refusal is MasterRestartedError", () => {
    const guard = guarded();
    guard.clockRead(reading(0, 0), 1_000);
    guard.clockRead(reading(1_000, 3_000), 2_000);
    guard.forget();
    expect(guard.withheld(3_000)).toEqual({ reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY });
    guard.observe(parseServerInfo(info('bbbb', 1))!, 3_000); // restarted: a new baseline, and the grace
    expect(guard.withheld(3_000)).toEqual({ reason: 'grace', waitMs: 10_000 });
    expect(guard.refusal('m:1', 3_000)).toBeInstanceOf(MasterRestartedError);
    // Its first reading is a baseline, however far from the old server's clock.
    expect(guard.clockRead(reading(4_000, 90_000), 4_000)).toBeUndefined();
  });
});
