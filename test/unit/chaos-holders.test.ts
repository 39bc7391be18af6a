/**
 * The chaos run's exclusion check across workers (chaos/holders.ts), on made-up reports.
 */
import { describe, expect, it } from 'vitest';
import { believedValid, overlappingHolders, type HolderReport } from '../../chaos/holders.js';

const report = (worker: number, id: number, event: HolderReport['event'], atMs: number, expirationMs = atMs + 1_000, value = `v${worker}-${id}`.padEnd(32, '0')): HolderReport => ({
  worker,
  id,
  value,
  resources: ['r'],
  atMs,
  expirationMs,
  event,
});

describe('chaos holders', () => {
  it('a lock is believed valid from each report to its expiration, the next report or its end', () => {
    expect(believedValid([report(0, 0, 'acquired', 0, 100)])).toEqual([[0, 100]]);
    expect(believedValid([report(0, 0, 'acquired', 0, 100), report(0, 0, 'extended', 50, 300), report(0, 0, 'ended', 120)])).toEqual([
      [0, 50],
      [50, 120],
    ]);
    // Expired before an extend resurrected it: a gap.
    expect(believedValid([report(0, 0, 'acquired', 0, 100), report(0, 0, 'extended', 150, 300)])).toEqual([
      [0, 100],
      [150, 300],
    ]);
  });

  it('passes holders that follow each other, and flags two believed valid at once, once per pair', () => {
    const clean = [report(0, 0, 'acquired', 0), report(0, 0, 'ended', 100), report(1, 0, 'acquired', 100), report(1, 0, 'ended', 200)];
    expect(overlappingHolders(clean)).toEqual([]);
    const overlap = [report(0, 0, 'acquired', 0, 500), report(0, 0, 'extended', 100, 600), report(1, 0, 'acquired', 200), report(1, 0, 'ended', 300)];
    expect(overlappingHolders(overlap)).toEqual([expect.stringMatching(/two holders of r believed valid at once: worker 0 .* and worker 1 .* \(100 ms of overlap\)/)]);
  });

  it('a re-entered view shares its holder value and overlaps it freely, but not another holder', () => {
    const value = 'x'.repeat(32);
    const reports = [report(0, 0, 'acquired', 0, 500, value), report(0, 1, 'acquired', 10, 500, value), report(0, 0, 'ended', 100)];
    expect(overlappingHolders(reports)).toEqual([]);
    expect(overlappingHolders([...reports, report(1, 0, 'acquired', 150)])).toHaveLength(1);
  });
});
