import { describe, expect, it } from 'vitest';
import { driftMs, expirationMs, retryDelayMs, validityMs } from '../../../src/protocol/validity.js';

describe('validity maths', () => {
  it('drift is ttl·driftFactor rounded down plus 2 ms', () => {
    expect(driftMs(10_000, 0.01)).toBe(102);
    expect(driftMs(1_000, 0.01)).toBe(12);
    expect(driftMs(150, 0.01)).toBe(3);
    expect(driftMs(1_000, 0)).toBe(2);
  });

  it('validity is ttl minus elapsed minus drift', () => {
    expect(validityMs(10_000, 0, 0.01)).toBe(9_898);
    expect(validityMs(10_000, 35.5, 0.01)).toBeCloseTo(9_862.5);
    expect(validityMs(1_000, 988, 0.01)).toBe(0);
    expect(validityMs(1_000, 1_500, 0.01)).toBeLessThan(0);
  });

  it('expiration is the attempt start + ttl − drift: the attempt end + its validity', () => {
    // Fake clocks: the attempt starts at monotonic 1000 / epoch 1_700_000_000_000 and takes 40 ms.
    const validity = validityMs(5_000, 1_040 - 1_000, 0.01);
    const expiration = expirationMs(1_700_000_000_000, 5_000, 0.01);
    expect(expiration).toBe(1_700_000_000_000 + 5_000 - driftMs(5_000, 0.01));
    expect(expiration).toBe(1_700_000_000_040 + validity);
  });

  it('expiration depends on nothing measured after the start: a stall after the decision changes nothing', () => {
    // However late the caller reads the clock after the decision, the anchor is the start.
    expect(expirationMs(1_700_000_000_000, 1_000, 0.01)).toBe(1_700_000_000_000 + 1_000 - 12);
  });

  it('expiration rounds down so a lock never looks valid for longer than it is', () => {
    expect(expirationMs(1_000.9, 100, 0)).toBe(1_098);
  });

  it('retry delay spreads ± jitter uniformly and is never negative', () => {
    expect(retryDelayMs(200, 100, 0)).toBe(100);
    expect(retryDelayMs(200, 100, 0.5)).toBe(200);
    expect(retryDelayMs(200, 100, 0.999999)).toBe(300);
    expect(retryDelayMs(10, 100, 0)).toBe(0);
    expect(retryDelayMs(0, 0, 0.7)).toBe(0);
  });
});
