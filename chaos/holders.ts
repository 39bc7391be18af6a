/**
 * The safety oracle's exclusion check across the chaos workers, pure: from what each worker's
 * library believed about each lease over time, at no instant may two leases with different values
 * be believed valid on one key unless both are read holds (readers share), nor more than `limit`
 * permits of one semaphore (each permit holds one of its slots' keys, which it holds alone). (The
 * section checker sees only sections that reached their end; this sees every lease held, bursts and
 * re-entered views included.)
 */
import type { LeaseKind } from '../src/index.js';

/** What a worker reports about one lease (a re-entered view is a lease of its own, with its holder's value). */
export interface HolderReport {
  readonly worker: number;
  /** Unique within the worker. */
  readonly id: number;
  readonly value: string;
  readonly resources: readonly string[];
  /** A lock (or write hold), a read hold, or a permit (its semaphore and limit). */
  readonly lease: LeaseKind;
  /** Epoch ms at which the worker saw it acquired, extended or ended. */
  readonly atMs: number;
  /** `lock.expiration` then (for `ended`: ignored). */
  readonly expirationMs: number;
  readonly event: 'acquired' | 'extended' | 'failed' | 'ended';
}

/** Two holders believed valid at once where they exclude each other, or permits past their limit. */
export interface HolderOverlap {
  /** The key both held, or the semaphore's name. */
  readonly resource: string;
  readonly message: string;
}

interface Span {
  readonly worker: number;
  readonly id: number;
  readonly value: string;
  readonly lease: LeaseKind;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * The intervals in which a lease was believed valid: from each report until its expiration, the next
 * report or the end, whichever is first (a report's instant is when the worker saw it, not earlier
 * than the library knew: spans are, if anything, short).
 */
export function believedValid(reports: readonly HolderReport[]): Array<[number, number]> {
  const sorted = [...reports].sort((a, b) => a.atMs - b.atMs);
  const endedMs = sorted.find((report) => report.event === 'ended')?.atMs ?? Number.POSITIVE_INFINITY;
  const spans: Array<[number, number]> = [];
  sorted.forEach((report, index) => {
    if (report.event === 'ended' || report.atMs >= endedMs) return;
    const nextMs = sorted[index + 1]?.atMs ?? Number.POSITIVE_INFINITY;
    const endMs = Math.min(report.expirationMs, nextMs, endedMs);
    if (endMs > report.atMs) spans.push([report.atMs, endMs]);
  });
  return spans;
}

/**
 * Every pair of leases on a key believed valid at once that exclude each other (once per pair), and
 * every permit believed valid while `limit` others of its semaphore were (once per permit).
 */
export function overlappingHolders(reports: readonly HolderReport[]): HolderOverlap[] {
  const byLease = new Map<string, HolderReport[]>();
  for (const report of reports) {
    const key = `${report.worker}/${report.id}`;
    const list = byLease.get(key) ?? [];
    list.push(report);
    byLease.set(key, list);
  }
  const byResource = new Map<string, Span[]>();
  const bySemaphore = new Map<string, Span[]>();
  const add = (groups: Map<string, Span[]>, name: string, span: Span): void => {
    const spans = groups.get(name) ?? [];
    spans.push(span);
    groups.set(name, spans);
  };
  for (const list of byLease.values()) {
    const { worker, id, value, resources, lease } = list[0]!;
    for (const [startMs, endMs] of believedValid(list)) {
      const span = { worker, id, value, lease, startMs, endMs };
      for (const resource of resources) add(byResource, resource, span);
      if (lease.type === 'permit') add(bySemaphore, lease.semaphore, span);
    }
  }
  const overlaps: HolderOverlap[] = [];
  const reported = new Set<string>();
  for (const [resource, spans] of byResource) {
    sweep(spans, (span, active) => {
      for (const other of active) {
        const pair = `${resource} ${other.worker}/${other.id} ${span.worker}/${span.id}`;
        if (other.value === span.value || (other.lease.type === 'read' && span.lease.type === 'read') || reported.has(pair)) continue;
        reported.add(pair);
        overlaps.push({
          resource,
          message:
            `two holders of ${resource} believed valid at once: ${describe(other)} and ${describe(span)} ` +
            `(${Math.min(other.endMs, span.endMs) - span.startMs} ms of overlap)`,
        });
      }
    });
  }
  for (const [semaphore, spans] of bySemaphore) {
    sweep(spans, (span, active) => {
      const { limit } = span.lease as Extract<LeaseKind, { type: 'permit' }>;
      const permits = new Map([...active, span].map((other) => [other.value, other]));
      const permit = `${semaphore} ${span.worker}/${span.id}`;
      if (permits.size <= limit || reported.has(permit)) return;
      reported.add(permit);
      const untilMs = Math.min(...[...permits.values()].map((other) => other.endMs));
      overlaps.push({
        resource: semaphore,
        message:
          `${permits.size} permits of ${semaphore} (limit ${limit}) believed valid at once: ${[...permits.values()].map(describe).join(', ')} ` +
          `(${untilMs - span.startMs} ms)`,
      });
    });
  }
  return overlaps;
}

/** Visit spans in start order, each with those still believed valid when it starts. */
function sweep(spans: Span[], visit: (span: Span, active: readonly Span[]) => void): void {
  spans.sort((a, b) => a.startMs - b.startMs);
  let active: Span[] = [];
  for (const span of spans) {
    active = active.filter((other) => other.endMs > span.startMs);
    visit(span, active);
    active.push(span);
  }
}

function describe(span: Span): string {
  const lease = span.lease.type === 'permit' ? `permit (slot ${span.lease.slot})` : span.lease.type === 'read' ? 'read hold' : 'lock';
  return `worker ${span.worker} ${lease} ${span.value.slice(0, 8)}… [${span.startMs}, ${span.endMs}]`;
}
