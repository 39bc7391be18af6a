/**
 * The chaos run's safety checker, pure so it can be tested on made-up histories.
 */
export interface Section {
  readonly worker: number;
  readonly resource: string;
  /** The lock value the section ran under. */
  readonly value: string;
  /** Epoch ms around the read-modify-write. */
  readonly start: number;
  readonly end: number;
  /** The lock's expiration when the write was done. */
  readonly expiration: number;
  /** The lock's fencing token, when the run uses fencing. */
  readonly token?: number;
}

export interface Verdict {
  readonly violations: string[];
  /** Sections written after their lock's validity (a worker paused past its ttl): the fencing case. */
  readonly pausedPastValidity: number;
}

/**
 * Two holders of one resource with overlapping sections (among those written while their lock was
 * valid), counters that differ from the number of sections written (lost updates), and, for fenced
 * sections, a token not larger than that of the resource's previous section (in start order: a
 * later lock on a resource is only acquired after the earlier one's validity ended).
 */
export function check(sections: readonly Section[], counters: ReadonlyMap<string, number>): Verdict {
  const violations: string[] = [];
  const valid = sections.filter((section) => section.end < section.expiration);
  for (const [resource, counter] of counters) {
    const ordered = valid.filter((s) => s.resource === resource).sort((a, b) => a.start - b.start);
    let reach: Section | undefined; // the section reaching furthest so far
    for (const section of ordered) {
      if (reach && section.start < reach.end && section.value !== reach.value) {
        violations.push(
          `overlap on ${resource}: worker ${reach.worker} [${reach.start}, ${reach.end}] and worker ${section.worker} [${section.start}, ${section.end}]`,
        );
      }
      if (!reach || section.end > reach.end) reach = section;
    }
    let previous: Section | undefined;
    for (const section of sections.filter((s) => s.resource === resource && s.token !== undefined).sort((a, b) => a.start - b.start)) {
      if (previous && section.token! <= previous.token!) {
        violations.push(
          `fencing token on ${resource} did not increase: worker ${previous.worker} token ${previous.token} at ${previous.start}, ` +
            `then worker ${section.worker} token ${section.token} at ${section.start}`,
        );
      }
      previous = section;
    }
    const written = sections.filter((s) => s.resource === resource).length;
    if (counter !== written) violations.push(`lost update on ${resource}: counter ${counter}, sections written ${written}`);
  }
  return { violations, pausedPastValidity: sections.length - valid.length };
}
