/**
 * The safety oracle's exclusion check across the chaos workers, pure: from what each worker's
 * library believed about each lock over time, no two locks on one resource with different values
 * may be believed valid at the same instant. (The section checker sees only sections that wrote;
 * this sees every held lock, bursts and re-entered views included.)
 */

/** What a worker reports about one lock (a re-entered view is a lock of its own, with its holder's value). */
export interface HolderReport {
  readonly worker: number;
  /** Unique within the worker. */
  readonly id: number;
  readonly value: string;
  readonly resources: readonly string[];
  /** Epoch ms at which the worker saw it acquired, extended or ended. */
  readonly atMs: number;
  /** `lock.expiration` then (for `ended`: ignored). */
  readonly expirationMs: number;
  readonly event: 'acquired' | 'extended' | 'failed' | 'ended';
}

interface Span {
  readonly worker: number;
  readonly id: number;
  readonly value: string;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * The intervals in which a lock was believed valid: from each report until its expiration, the next
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

/** Every pair of locks on a resource believed valid at once, as messages (one per pair). */
export function overlappingHolders(reports: readonly HolderReport[]): string[] {
  const byLock = new Map<string, HolderReport[]>();
  for (const report of reports) {
    const key = `${report.worker}/${report.id}`;
    const list = byLock.get(key) ?? [];
    list.push(report);
    byLock.set(key, list);
  }
  const byResource = new Map<string, Span[]>();
  for (const list of byLock.values()) {
    const { worker, id, value, resources } = list[0]!;
    for (const [startMs, endMs] of believedValid(list)) {
      for (const resource of resources) {
        const spans = byResource.get(resource) ?? [];
        spans.push({ worker, id, value, startMs, endMs });
        byResource.set(resource, spans);
      }
    }
  }
  const violations: string[] = [];
  const reported = new Set<string>();
  for (const [resource, spans] of byResource) {
    spans.sort((a, b) => a.startMs - b.startMs);
    let active: Span[] = [];
    for (const span of spans) {
      active = active.filter((other) => other.endMs > span.startMs);
      for (const other of active) {
        const pair = `${resource} ${other.worker}/${other.id} ${span.worker}/${span.id}`;
        if (other.value === span.value || reported.has(pair)) continue;
        reported.add(pair);
        violations.push(
          `two holders of ${resource} believed valid at once: worker ${other.worker} lock ${other.value.slice(0, 8)}… ` +
            `[${other.startMs}, ${other.endMs}] and worker ${span.worker} lock ${span.value.slice(0, 8)}… [${span.startMs}, ${span.endMs}] ` +
            `(${Math.min(other.endMs, span.endMs) - span.startMs} ms of overlap)`,
        );
      }
      active.push(span);
    }
  }
  return violations;
}
