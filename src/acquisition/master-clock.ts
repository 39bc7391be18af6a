/**
 * The masters' clock as this process reads it: where its waiters stand in the masters' lines.
 *
 * A ticket's place must not depend on any client's wall clock (a process 10 minutes behind would
 * otherwise always go first), yet every master must give a ticket the same place, or masters that
 * order two near-simultaneous waiters differently split their votes and wake neither. So a place is
 * when the acquire began on the masters' clock: this process' monotonic start plus the offset from
 * its monotonic clock to the median of the masters' TIME, read once and again every `refreshMs`.
 * The median is the masters' own (a minority of masters with wild clocks does not move it); a
 * client's clock enters only through its rate, over at most `refreshMs`.
 */
export class MasterClock {
  #offsetMs: number | undefined;
  #sampledAtMs = Number.NEGATIVE_INFINITY;
  #sampling: Promise<void> | undefined;

  constructor(
    private readonly monotonicMs: () => number,
    private readonly refreshMs = 60_000,
  ) {}

  /** Where an acquire begun at `startedMs` (monotonic) stands on the masters' clock; undefined before a first reading. */
  placeOf(startedMs: number): number | undefined {
    return this.#offsetMs === undefined ? undefined : startedMs + this.#offsetMs;
  }

  /** No reading yet, or one older than `refreshMs` (also after a reading no master answered). */
  get stale(): boolean {
    return this.monotonicMs() - this.#sampledAtMs >= this.refreshMs;
  }

  /**
   * Read the masters' clocks with `read`, which resolves to one offset per master that answered
   * (its TIME minus the midpoint of the round trip on the monotonic clock). Concurrent calls share
   * one reading; no answer keeps the offset there was.
   */
  sample(read: () => Promise<readonly number[]>): Promise<void> {
    this.#sampling ??= read()
      .then((offsets) => {
        const median = medianOf(offsets);
        if (median !== undefined) this.#offsetMs = median;
      })
      .catch(() => undefined)
      .finally(() => {
        this.#sampledAtMs = this.monotonicMs();
        this.#sampling = undefined;
      });
    return this.#sampling;
  }
}

/** The median of `values` (the mean of the middle two for an even count); undefined for none. */
export function medianOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
