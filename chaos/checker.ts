/**
 * The chaos run's safety checker, pure so it can be tested on made-up histories.
 */
export interface Section {
  readonly worker: number;
  readonly resource: string;
  /** The lock value the section ran under. */
  readonly value: string;
  /** Epoch ms at which the storage served the section's read and applied its write. */
  readonly start: number;
  readonly end: number;
  /** The lock's expiration (epoch ms) as its holder knew it. */
  readonly expiration: number;
  /** The resource's version in the storage when the section read it, and the version its write made. */
  readonly readVersion: number;
  readonly version: number;
  /** The lock's fencing token, when the run uses fencing. */
  readonly token?: number;
}

export interface Verdict {
  readonly violations: string[];
  /** Sections whose write reached the storage after their lock's validity (a worker paused past its ttl). */
  readonly pausedPastValidity: number;
  /** Writes erased by a later write that had read before them (only ever with a late section, or it is a violation). */
  readonly lostUpdates: number;
}

const late = (section: Section): boolean => section.end >= section.expiration;

/**
 * The guarantees a lock gives, checked against what the storage saw:
 * - no two holders of one resource inside their validity at once (a section holds from its read
 *   until its write or its lock's expiration, whichever is first);
 * - no lost update between two sections written within their validity: a write erases the writes
 *   made to its resource since it read (versions between its read and its own); that is a
 *   violation when both it and an erased write were in time. Erasures involving a late section
 *   (paused past its ttl between its last check and its write) are counted, not flagged: no lease
 *   can prevent them — fencing tokens can, and with fencing the storage refuses such writes;
 * - the storage's final value is the one its history of writes gives;
 * - with fencing, each resource's tokens increase from section to section (in start order: a later
 *   lock on a resource is only acquired after the earlier one's validity ended).
 */
export function check(sections: readonly Section[], counters: ReadonlyMap<string, number>): Verdict {
  const violations: string[] = [];
  let lostUpdates = 0;
  for (const [resource, counter] of counters) {
    const history = sections.filter((s) => s.resource === resource);

    const held = history.map((s) => ({ ...s, end: Math.min(s.end, s.expiration) })).sort((a, b) => a.start - b.start);
    let reach: (typeof held)[number] | undefined; // the section reaching furthest so far
    for (const section of held) {
      if (reach && section.start < reach.end && section.value !== reach.value) {
        violations.push(
          `overlap on ${resource}: worker ${reach.worker} [${reach.start}, ${reach.end}] and worker ${section.worker} [${section.start}, ${section.end}]`,
        );
      }
      if (!reach || section.end > reach.end) reach = section;
    }

    // Every write stores what its section read + 1, so the value is a chain of read pointers from
    // the last version back to 0; writes off that chain were erased by a later write that had
    // read before them. An erasure between two sections written within their validity means two
    // holders at once.
    const byVersion = new Map(history.map((s) => [s.version, s]));
    for (const section of history) {
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
    if (counter !== chain) violations.push(`counter on ${resource} is ${counter}, but its history of writes gives ${chain}`);
    lostUpdates += history.length - chain;

    let previous: Section | undefined;
    for (const section of history.filter((s) => s.token !== undefined).sort((a, b) => a.start - b.start)) {
      if (previous && section.token! <= previous.token!) {
        violations.push(
          `fencing token on ${resource} did not increase: worker ${previous.worker} token ${previous.token} at ${previous.start}, ` +
            `then worker ${section.worker} token ${section.token} at ${section.start}`,
        );
      }
      previous = section;
    }
  }
  return { violations, pausedPastValidity: sections.filter(late).length, lostUpdates };
}
