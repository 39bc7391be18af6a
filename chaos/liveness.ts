/**
 * The chaos run's liveness watch, pure so it can be tested on made-up histories. Its inputs:
 * - samples of the waiting lines (sampler.ts): at a steady rate, on each master that answered, is
 *   each watched resource's key absent (free), and does a live ticket stand in its line;
 * - every acquire the workers made on watched resources: when it began and ended (real time), on
 *   which resources, and whether it was granted or gave up;
 * - the instants each worker was not running (SIGSTOPped, or its event loop busy), from its own
 *   lag monitor: a waiter that cannot run cannot take a free resource, and its ticket may stand in
 *   the line, unrenewed, until its ttl.
 * A line stalls when its resource is free on a quorum of masters while a live ticket is in it and a
 * waiter could take it, and nobody is granted it meanwhile (a grant between two samples ends the
 * stall: the line moved, though a short section between samples leaves it free in each): an acquire in progress on it whose every resource is free on a quorum of the
 * masters its worker reaches (one for [a, b] while a is held waits for a, not for this line; one a
 * partition cuts from the free masters cannot reach them, nor count a master its restart guard
 * withholds for a grace after a restart; the run says which: `cuts`). The library promises that
 * lasts no longer than a ticket's ttl, 2 × (retryDelay + retryJitter) +
 * nodeTimeout (a dead waiter's ticket lapses by then, a live one has retried twice), plus one round
 * trip: the slower of the sampler's and the waiters' granting attempts (a waiter tries again the
 * moment a place ahead lapses, and holds it one attempt later). Longer is a violation; so is an acquire that gives up while its resources were free on a
 * quorum for most of its wait, and a read nested in a read hold of the same name that gives up while
 * its outer hold was valid (it re-enters: it never waits).
 */

/** One sample of every master's lines (real epoch ms; masters that did not answer in time are left out). */
export interface LineSample {
  readonly atMs: number;
  /** The slowest answer's round trip, ms. */
  readonly rttMs: number;
  /** How many masters answered. */
  readonly answered: number;
  /** The masters (by index) that did not answer in time, if the sampler says. */
  readonly missing?: readonly number[];
  /**
   * Per watched resource: on how many answering masters its key is absent (and which: a bit per
   * master index, if the sampler says), and on how many a live ticket is in its line; per master
   * (by index), the line's head ticket, '^' after it while it holds a reservation there ('' none).
   */
  readonly lines: ReadonlyMap<string, { readonly freeOn: number; readonly freeMask?: number; readonly queuedOn: number; readonly heads?: readonly string[] }>;
}

/** One acquire call a worker made on watched resources (real epoch ms). */
export interface AcquireReport {
  readonly worker: number;
  readonly resources: readonly string[];
  readonly startMs: number;
  readonly endMs: number;
  readonly outcome: 'acquired' | 'gave-up';
  /** A read nested in a read hold of the same name: whether the outer hold was still valid at the end. */
  readonly outerValid?: boolean;
  /** Granted: how long the granting attempt took, ms (the round trip between deciding to go and holding it). */
  readonly attemptMs?: number;
}

/**
 * An interval in which a worker could not count some masters (real epoch ms): a partition cut it
 * from them (either way counts), or its restart guard withheld their votes (graces()).
 */
export interface CutReport {
  readonly worker: number;
  /** The masters cut off, by index. */
  readonly masters: readonly number[];
  readonly startMs: number;
  readonly endMs: number;
}

/** An interval in which a worker's event loop did not run (real epoch ms). */
export interface StallReport {
  readonly worker: number;
  readonly startMs: number;
  readonly endMs: number;
}

/** What graces() reads of a master's health (Redlock.health()). */
export interface GuardedHealth {
  readonly withheld?: { readonly reason: string; readonly waitMs: number };
}

/**
 * The restart guard's graces in one worker, as cuts: a master that restarted (a new run id seen on
 * the worker's reconnect) gets no vote there for graceMs, however free the sampler finds it, so a
 * waiter there cannot count it. From each master's health at `nowMs` (read last at `sinceMs`), the
 * graces not reported yet; `reported` holds, per master, when the latest reported one ends (updated).
 * Only the restart's grace: a clock jump's is reported apart ('withheld'), and an unchecked master
 * (its INFO not read yet on a new connection) is the reconnect's business, which the watch judges.
 */
export function graces(worker: number, healths: readonly GuardedHealth[], sinceMs: number, nowMs: number, reported: number[]): CutReport[] {
  const found: CutReport[] = [];
  healths.forEach(({ withheld }, master) => {
    if (withheld?.reason !== 'grace' || !Number.isFinite(withheld.waitMs)) return;
    const endMs = nowMs + withheld.waitMs;
    // The same grace read again: its end moves only with the reading's timing.
    if (endMs <= (reported[master] ?? Number.NEGATIVE_INFINITY) + 50) return;
    reported[master] = endMs;
    found.push({ worker, masters: [master], startMs: sinceMs, endMs });
  });
  return found;
}

export interface LivenessSettings {
  readonly quorum: number;
  /** 2 × (retryDelay + retryJitter) + nodeTimeout: how long a line may stall (plus a round trip). */
  readonly ticketTtlMs: number;
  /** retryDelay + retryJitter: after a stall a waiter may sleep this long before it tries again. */
  readonly retrySleepMs: number;
  /** Samples further apart than this (the sampler itself stalled) do not make one stalled interval. */
  readonly maxSampleGapMs: number;
  /** An acquire judged for giving up needs at least this many samples of its wait in which a quorum answered. */
  readonly minSamples: number;
  /** Which worker a ticket is of (undefined: not known); a violation names its lines' heads so. */
  readonly owner?: (ticket: string) => number | undefined;
}

export interface LivenessViolation {
  /** The resource (an acquire's first) the violation is about. */
  readonly resource: string;
  readonly message: string;
}

export interface LivenessVerdict {
  readonly violations: LivenessViolation[];
  readonly samples: number;
  /** Samples in which at least a quorum of masters answered (the others are not judged). */
  readonly visibleSamples: number;
  /** Stalled intervals seen (a line free on a quorum with a live waiter in it, for any length). */
  readonly stalledIntervals: number;
  readonly longestStalledMs: number;
  /** Stalled samples not judged because a waiter on the resource was not running (or had just resumed). */
  readonly excusedSamples: number;
  readonly gaveUp: number;
}

const iso = (ms: number): string => new Date(ms).toISOString().slice(11, 23);

/** Disjoint, sorted intervals per worker: when each was not running, widened by `afterMs`. */
function stallIndex(stalls: readonly StallReport[], afterMs: number): Map<number, Array<[number, number]>> {
  const byWorker = new Map<number, Array<[number, number]>>();
  for (const stall of [...stalls].sort((a, b) => a.startMs - b.startMs)) {
    const list = byWorker.get(stall.worker) ?? [];
    byWorker.set(stall.worker, list);
    const last = list[list.length - 1];
    const endMs = stall.endMs + afterMs;
    if (last && stall.startMs <= last[1]) last[1] = Math.max(last[1], endMs);
    else list.push([stall.startMs, endMs]);
  }
  return byWorker;
}

function within(intervals: ReadonlyArray<readonly [number, number]> | undefined, atMs: number): boolean {
  if (!intervals) return false;
  let low = 0;
  let high = intervals.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [startMs, endMs] = intervals[middle]!;
    if (atMs < startMs) high = middle - 1;
    else if (atMs > endMs) low = middle + 1;
    else return true;
  }
  return false;
}

/** The index of the first sample at or after `atMs` (samples sorted). */
function firstAtOrAfter(samples: readonly LineSample[], atMs: number): number {
  let low = 0;
  let high = samples.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (samples[middle]!.atMs < atMs) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The masters each worker could not reach at an instant (a bit each), from the partitions. */
function cutIndex(cuts: readonly CutReport[]): (worker: number, atMs: number) => number {
  return (worker, atMs) => {
    let mask = 0;
    for (const cut of cuts) {
      if (cut.worker === worker && cut.startMs <= atMs && atMs <= cut.endMs) for (const master of cut.masters) mask |= 1 << master;
    }
    return mask;
  };
}

/** How many masters a mask (a bit each) names. */
export function bits(mask: number): number {
  let count = 0;
  for (let rest = mask; rest !== 0; rest &= rest - 1) count++;
  return count;
}

export function checkLiveness(
  unsorted: readonly LineSample[],
  acquires: readonly AcquireReport[],
  stalls: readonly StallReport[],
  settings: LivenessSettings,
  cuts: readonly CutReport[] = [],
): LivenessVerdict {
  const samples = [...unsorted].sort((a, b) => a.atMs - b.atMs);
  const { quorum, ticketTtlMs } = settings;
  const cutOff = cutIndex(cuts);
  /** Could `acquire` be granted in `sample`: every resource free on a quorum of the masters its worker reaches. */
  const able = (acquire: AcquireReport, sample: LineSample): boolean =>
    acquire.resources.every((resource) => {
      const line = sample.lines.get(resource);
      if (!line) return false;
      if (line.freeMask === undefined) return line.freeOn >= quorum;
      return bits(line.freeMask & ~cutOff(acquire.worker, sample.atMs)) >= quorum;
    });
  const notRunning = stallIndex(stalls, settings.retrySleepMs);
  /** Which workers were not running between two instants, and for how long in all. */
  const paused = (fromMs: number, toMs: number): string => {
    const found = [...notRunning].flatMap(([worker, intervals]) => {
      const ms = intervals.reduce((sum, [startMs, endMs]) => sum + Math.max(0, Math.min(endMs, toMs) - Math.max(startMs, fromMs)), 0);
      return ms > 0 ? [`worker ${worker} ${ms} ms`] : [];
    });
    return found.length > 0 ? `; not running (with a retry sleep after) in the ttl before and during it: ${found.join(', ')}` : '';
  };
  const violations: LivenessViolation[] = [];
  const visible = (sample: LineSample): boolean => sample.answered >= quorum;
  let stalledIntervals = 0;
  let longestStalledMs = 0;
  let excusedSamples = 0;

  const watched = new Set(samples.flatMap((sample) => [...sample.lines.keys()]));
  for (const resource of watched) {
    // Sweep the samples in time order beside the acquires on this resource in start order, keeping
    // those in progress: the live waiters.
    const onResource = acquires.filter((acquire) => acquire.resources.includes(resource)).sort((a, b) => a.startMs - b.startMs);
    let next = 0;
    let waiting: AcquireReport[] = [];
    let run:
      | { startMs: number; lastMs: number; rttMs: number; freeOn: number; answered: number; missing: readonly number[]; waiters: AcquireReport[]; heads: Array<readonly string[] | undefined> }
      | undefined;
    /** The heads per master, by worker ('w3^': a ticket of worker 3 reserving it), and when those workers were not running near the stall. */
    const described = (heads: readonly string[] | undefined): string =>
      (heads ?? []).map((head, master) => `m${master} ${head === '' ? '-' : `w${settings.owner?.(head.replace(/\^$/, '')) ?? '?'}${head.endsWith('^') ? '^' : ''}`}`).join(' ');
    const close = (): void => {
      if (!run) return;
      const stalledMs = run.lastMs - run.startMs;
      stalledIntervals++;
      longestStalledMs = Math.max(longestStalledMs, stalledMs);
      const tripMs = Math.max(run.rttMs, ...run.waiters.map((waiter) => Math.ceil(waiter.attemptMs ?? 0)));
      if (stalledMs > ticketTtlMs + tripMs) {
        const who = run.waiters.map((w) => `worker ${w.worker} [${w.resources.join(', ')}] since ${iso(w.startMs)} (${w.outcome} at ${iso(w.endMs)})`);
        violations.push({
          resource,
          message:
            `${resource} was free on a quorum (${run.freeOn} of ${run.answered} answering${run.missing.length > 0 ? `; masters ${run.missing.join(',')} not` : ''}) with a live ticket in its line and a waiter that could take it for ${stalledMs} ms from ` +
            `${iso(run.startMs)} (bound: ticket ttl ${ticketTtlMs} ms + a ${tripMs} ms round trip); waiting: ${who.join('; ')}` +
            `; heads: ${run.heads.map(described).join(' → ')}${paused(run.startMs - ticketTtlMs, run.lastMs)}`,
        });
      }
      run = undefined;
    };
    // When someone was granted the resource, in time order: the line moved then, so a stall ends
    // there (samples a section apart may find it free each time, and a new waiter each time).
    const grants = onResource.filter((acquire) => acquire.outcome === 'acquired').map((acquire) => acquire.endMs).sort((a, b) => a - b);
    let nextGrant = 0;
    let previousMs = Number.NEGATIVE_INFINITY;
    for (const sample of samples) {
      if (sample.atMs - previousMs > settings.maxSampleGapMs) close();
      let granted = false;
      while (nextGrant < grants.length && grants[nextGrant]! <= sample.atMs) granted = grants[nextGrant++]! > previousMs || granted;
      if (granted) close();
      previousMs = sample.atMs;
      while (next < onResource.length && onResource[next]!.startMs <= sample.atMs) waiting.push(onResource[next++]!);
      waiting = waiting.filter((acquire) => acquire.endMs > sample.atMs);
      const line = sample.lines.get(resource);
      // The waiters that could be granted now: everything they ask for is free on a quorum of the
      // masters they reach (a waiter a partition cuts from the free masters cannot take them).
      const ready = waiting.filter((acquire) => able(acquire, sample));
      if (!visible(sample) || !line || line.freeOn < quorum || line.queuedOn === 0 || ready.length === 0) {
        close();
        continue;
      }
      if (ready.some((acquire) => within(notRunning.get(acquire.worker), sample.atMs))) {
        excusedSamples++;
        close();
        continue;
      }
      run ??= { startMs: sample.atMs, lastMs: sample.atMs, rttMs: 0, freeOn: line.freeOn, answered: sample.answered, missing: sample.missing ?? [], waiters: [], heads: [] };
      run.lastMs = sample.atMs;
      const headsNow = line.heads?.join(' ');
      if (headsNow !== run.heads.at(-1)?.join(' ')) run.heads.push(line.heads);
      run.rttMs = Math.max(run.rttMs, Math.ceil(sample.rttMs));
      for (const acquire of ready) if (!run.waiters.includes(acquire)) run.waiters.push(acquire);
    }
    close();
  }

  const gaveUp = acquires.filter((acquire) => acquire.outcome === 'gave-up');
  for (const acquire of gaveUp) {
    const described = `worker ${acquire.worker}'s acquire of [${acquire.resources.join(', ')}] (${iso(acquire.startMs)} to ${iso(acquire.endMs)}, ${acquire.endMs - acquire.startMs} ms)`;
    if (acquire.outerValid) {
      violations.push({ resource: acquire.resources[0]!, message: `${described}, a read nested in a valid read hold of the same name, waited and gave up instead of re-entering` });
      continue;
    }
    if (!acquire.resources.every((resource) => watched.has(resource))) continue;
    let judged = 0;
    let free = 0;
    for (let index = firstAtOrAfter(samples, acquire.startMs); index < samples.length && samples[index]!.atMs <= acquire.endMs; index++) {
      const sample = samples[index]!;
      if (!visible(sample) || within(notRunning.get(acquire.worker), sample.atMs)) continue;
      judged++;
      if (able(acquire, sample)) free++;
    }
    if (judged >= settings.minSamples && free * 2 > judged) {
      violations.push({ resource: acquire.resources[0]!, message: `${described} gave up while free on a quorum in ${free} of its ${judged} samples` });
    }
  }

  return {
    violations,
    samples: samples.length,
    visibleSamples: samples.filter(visible).length,
    stalledIntervals,
    longestStalledMs,
    excusedSamples,
    gaveUp: gaveUp.length,
  };
}
