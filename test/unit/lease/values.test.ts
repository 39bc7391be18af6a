import { describe, expect, it } from 'vitest';
import { newLockValue } from '../../../src/lease/values.js';

describe('lock values', () => {
  it('are 128-bit hex strings, all different across several pool refills', () => {
    const values = Array.from({ length: 2_000 }, () => newLockValue());
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(values).size).toBe(values.length);
  });
});
