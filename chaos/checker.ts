/**
 * The chaos run's safety checker, pure so it can be tested on made-up histories.
 */
interface Held {
  readonly worker: number;
  /** A lock's resource, the read-write lock's name, or the semaphore's name. */
  readonly resource: string;
  /** The lease's value (a lock's, a permit's, a read hold's) the section ran under. */
  readonly value: string;
  /** Epoch ms at which the storage served the section's first request (a read) and its last (a write, or a leave). */
  readonly start: number;
  readonly end: number;
  /** The lease's expiration (epoch ms) as its holder knew it at its last check. */
  readonly expiration: number;
}

/**
 * An exclusive section (a plain lock, a read-write lock's write hold, which is the same lock, or one
 * of the two resources of a lock on both or of nested locks): it read its resource's counter, then
 * wrote it + 1.
 */
export interface WriteSection extends Held {
  readonly kind: 'lock' | 'write' | 'multi' | 'nested';
  /** The resource's version in the storage when the section read it, and the version its write made. */
  readonly readVersion: number;
  readonly version: number;
  /** The lock's fencing token, when the run uses fencing. */
  readonly token?: number;
}

/** A read hold's section (maybe one nested in a read hold): it read the counter (at version `readVersion`) and wrote nothing. */
export interface ReadSection extends Held {
  readonly kind: 'read' | 'nested-read';
  readonly readVersion: number;
}

/** A permit's section: one of at most `limit` at once; `slot` is the semaphore's slot it held. */
export interface PermitSection extends Held {
  readonly kind: 'permit';
  readonly limit: number;
  readonly slot: number;
}

export type Section = WriteSection | ReadSection | PermitSection;

/** One resource's history as the checker saw it. */
export interface ResourceVerdict {
  readonly sections: number;
  /** The most sections within their validity at one instant (readers at once; permits at once). */
  readonly peak: number;
  readonly violations: number;
}

export interface Verdict {
  readonly violations: string[];
  /** Sections whose last request reached the storage after their lease's validity (a worker paused past its ttl). */
  readonly pausedPastValidity: number;
  /** Writes erased by a later write that had read before them (only ever with a late section, or it is a violation). */
  readonly lostUpdates: number;
  /** By resource (a lock's resource, the read-write lock's or the semaphore's name). */
  readonly resources: ReadonlyMap<string, ResourceVerdict>;
}

const late = (section: Section): boolean => section.end >= section.expiration;
const exclusive = (section: Section): section is WriteSection => section.kind !== 'read' && section.kind !== 'nested-read' && section.kind !== 'permit';
const reads = (section: Section): boolean => section.kind === 'read' || section.kind === 'nested-read';
const describe = (section: Section): string =>
  `worker ${section.worker} ${section.kind === 'permit' ? `permit (slot ${section.slot})` : section.kind} [${section.start}, ${section.end}]`;

/**
 * The guarantees the leases give, checked against what the storage saw. A section holds from its
 * first request until its last or its lease's expiration, whichever is first; at every instant:
 * - an exclusive section (a lock, a write hold) is the only section of its resource within validity;
 * - read sections share their resource with each other, never with a writer;
 * - at most `limit` permit sections of a semaphore are within validity;
 * and for the writers' counters:
 * - no lost update between two writes made within their validity: a write erases the writes made to
 *   its resource since it read (versions between its read and its own); that is a violation when
 *   both it and an erased write were in time. Erasures involving a late section (paused past its ttl
 *   between its last check and its write) are counted, not flagged: no lease can prevent them —
 *   fencing tokens can, and with fencing the storage refuses such writes;
 * - the storage's final value is the one its history of writes gives;
 * - with fencing, each resource's tokens increase from write to write (in start order: a later
 *   lock on a resource is only acquired after the earlier one's validity ended).
 * `counters`: each written resource's final value in the storage (a resource written but missing here counts as 0).
 */
export function check(sections: readonly Section[], counters: ReadonlyMap<string, number>): Verdict {
  const violations: string[] = [];
  const resources = new Map<string, ResourceVerdict>();
  let lostUpdates = 0;
  for (const resource of new Set([...counters.keys(), ...sections.map((s) => s.resource)])) {
    const history = sections.filter((s) => s.resource === resource);
    const before = violations.length;

    // Sweep the sections in start order, keeping those still within validity: the count of holders
    // only grows when one starts, so checking at each start checks every instant.
    const held = history
      .map((s) => ({ ...s, end: Math.min(s.end, s.expiration) }))
      .filter((s) => s.end > s.start)
      .sort((a, b) => a.start - b.start);
    let active: Section[] = [];
    let peak = 0;
    for (const section of held) {
      active = active.filter((other) => other.end > section.start);
      const others = active.filter((other) => other.value !== section.value);
      for (const other of others) {
        const shared = (reads(other) && reads(section)) || (other.kind === 'permit' && section.kind === 'permit');
        if (!shared) violations.push(`overlap on ${resource}: ${describe(other)} and ${describe(section)}`);
      }
      if (section.kind === 'permit') {
        const permits = [...others.filter((other) => other.kind === 'permit'), section];
        if (permits.length > section.limit) {
          violations.push(`${permits.length} permits of ${resource} within validity at once (limit ${section.limit}): ${permits.map(describe).join(', ')}`);
        }
      }
      active.push(section);
      peak = Math.max(peak, active.length);
    }

    const writes = history.filter(exclusive);
    if (writes.length > 0 || counters.has(resource)) {
      // Every write stores what its section read + 1, so the value is a chain of read pointers from
      // the last version back to 0; writes off that chain were erased by a later write that had
      // read before them. An erasure between two sections written within their validity means two
      // holders at once.
      const byVersion = new Map(writes.map((s) => [s.version, s]));
      for (const section of writes) {
        for (let version = section.readVersion + 1; version < section.version; version++) {
          const erased = byVersion.get(version);
          if (erased && !late(section) && !late(erased)) {
            violations.push(
              `lost update on ${resource}: worker ${section.worker} (read v${section.readVersion} at ${section.start}, wrote v${section.version} at ${section.end}) ` +
                `erased worker ${erased.worker}'s write v${version} at ${erased.end}, both within their validity`,
            );
          }
        }
      }
      let chain = 0;
      for (let version = Math.max(0, ...byVersion.keys()); version > 0; version = byVersion.get(version)?.readVersion ?? 0) chain++;
      const counter = counters.get(resource) ?? 0;
      if (counter !== chain) violations.push(`counter on ${resource} is ${counter}, but its history of writes gives ${chain}`);
      lostUpdates += writes.length - chain;
    }

    let previous: WriteSection | undefined;
    for (const section of writes.filter((s) => s.token !== undefined).sort((a, b) => a.start - b.start)) {
      if (previous && section.token! <= previous.token!) {
        violations.push(
          `fencing token on ${resource} did not increase: worker ${previous.worker} token ${previous.token} at ${previous.start}, ` +
            `then worker ${section.worker} token ${section.token} at ${section.start}`,
        );
      }
      previous = section;
    }
    resources.set(resource, { sections: history.length, peak, violations: violations.length - before });
  }
  return { violations, pausedPastValidity: sections.filter(late).length, lostUpdates, resources };
}
