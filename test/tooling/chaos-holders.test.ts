/**
 * The chaos run's exclusion check across workers (chaos/holders.ts), on made-up reports.
 */
import { describe, expect, it } from 'vitest';
import { believedValid, overlappingHolders, type HolderReport } from '../../chaos/holders.js';
import type { LeaseKind } from '../../src/index.js';

const report = (
  worker: number,
  id: number,
  event: HolderReport['event'],
  atMs: number,
  expirationMs = atMs + 1_000,
  value = `v${worker}-${id}`.padEnd(32, '0'),
  lease: LeaseKind = { type: 'lock' },
  resources = ['r'],
): HolderReport => ({
  worker,
  id,
  value,
  resources,
  lease,
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
    expect(overlappingHolders(overlap)).toEqual([
      { resource: 'r', message: expect.stringMatching(/two holders of r believed valid at once: worker 0 lock .* and worker 1 lock .* \(100 ms of overlap\)/) as unknown },
    ]);
  });

  it('a re-entered view shares its holder value and overlaps it freely, but not another holder', () => {
    const value = 'x'.repeat(32);
    const reports = [report(0, 0, 'acquired', 0, 500, value), report(0, 1, 'acquired', 10, 500, value), report(0, 0, 'ended', 100)];
    expect(overlappingHolders(reports)).toEqual([]);
    expect(overlappingHolders([...reports, report(1, 0, 'acquired', 150)])).toHaveLength(1);
  });

  /** A read hold on `r` over [atMs, expirationMs], ended there. */
  const read = (worker: number, id: number, atMs: number, expirationMs: number): HolderReport[] => [
    report(worker, id, 'acquired', atMs, expirationMs, undefined, { type: 'read' }),
    report(worker, id, 'ended', expirationMs),
  ];
  /** A permit of semaphore `s` (limit 2) in slot `slot` over [atMs, endMs]. */
  const permit = (worker: number, id: number, slot: number, atMs: number, endMs: number): HolderReport[] => [
    report(worker, id, 'acquired', atMs, endMs + 500, undefined, { type: 'permit', semaphore: 's', limit: 2, slot }, [`s:redlock-permit:${slot}`]),
    report(worker, id, 'ended', endMs),
  ];

  it('read holds overlap each other freely, but not a lock (or write hold) on their key', () => {
    const readers = [...read(0, 0, 0, 100), ...read(1, 0, 10, 120), ...read(2, 0, 50, 200), ...read(3, 0, 90, 95)];
    expect(overlappingHolders(readers)).toEqual([]);
    const writer = [report(3, 1, 'acquired', 110, 300), report(3, 1, 'ended', 130)];
    expect(overlappingHolders([...readers, ...writer]).map((overlap) => overlap.message)).toEqual([
      expect.stringMatching(/^two holders of r believed valid at once: worker 1 read hold .* and worker 3 lock .* \(10 ms of overlap\)$/),
      expect.stringMatching(/^two holders of r believed valid at once: worker 2 read hold .* and worker 3 lock .* \(20 ms of overlap\)$/),
    ]);
    // A reader that starts while a writer holds.
    expect(overlappingHolders([...writer, ...read(0, 2, 120, 200)])).toHaveLength(1);
  });

  it('permits of a semaphore overlap up to its limit, in distinct slots', () => {
    const clean = [...permit(0, 0, 0, 0, 100), ...permit(1, 0, 1, 10, 120), ...permit(2, 0, 0, 100, 200), ...permit(3, 0, 1, 120, 150)];
    expect(overlappingHolders(clean)).toEqual([]);
  });

  it('flags a permit believed valid while limit others are, once per permit', () => {
    const extended = [...permit(2, 0, 1, 50, 80), report(2, 0, 'extended', 60, 80)]; // two spans of one permit: one flag
    const reports = [...permit(0, 0, 0, 0, 100), ...permit(1, 0, 1, 10, 70), ...extended];
    const overlaps = overlappingHolders(reports);
    expect(overlaps.filter((overlap) => overlap.resource === 's').map((overlap) => overlap.message)).toEqual([
      expect.stringMatching(/^3 permits of s \(limit 2\) believed valid at once: worker 0 permit \(slot 0\) .*, worker 1 permit \(slot 1\) .*, worker 2 permit \(slot 1\) .* \(10 ms\)$/),
    ]);
    // Two permits in one slot at once are two holders of its key, whatever the count.
    const sameSlot = [...permit(0, 0, 0, 0, 100), ...permit(1, 0, 0, 50, 150)];
    expect(overlappingHolders(sameSlot)).toEqual([{ resource: 's:redlock-permit:0', message: expect.stringMatching(/^two holders of s:redlock-permit:0 /) as unknown }]);
  });
});
