/** One master's answer to a reading: its TIME minus the round trip's midpoint, and the round trip, both in ms. */
export interface ClockReading {
  readonly offsetMs: number;
  readonly roundTripMs: number;
}

/** How fast the offset may move, at most, between the client's monotonic clock and a master's (100 ppm). */
const DRIFT_RATE = 1e-4;
/** A process' first `FIRST_READINGS` readings, and a loose one, are followed by another this soon. */
const RETRY_MS = 1_000;
const FIRST_READINGS = 3;
/** A reading is loose when its error bound is this much above twice the tightest one seen (ms). */
const LOOSE_SLACK_MS = 0.5;

/**
 * The masters' clock as this process reads it: where its waiters stand in the masters' lines.
 *
 * A ticket's place must not depend on a client's wall clock (one 10 minutes behind would always go
 * first), yet every master must give it the same place, or masters ordering two waiters differently
 * split their votes and wake neither. So a place is the acquire's monotonic start plus the offset to
 * the median of the masters' TIME, which a minority of wild master clocks does not move.
 *
 * Half a reading's round trip bounds its error, and a reading taken while the event loop was busy
 * would place waiters early for the whole `refreshMs`. So the tightest reading is kept, its bound
 * growing by the drift allowance as it ages; loose ones are retried, and all renewed after `refreshMs`.
 */
export class MasterClock {
  #offsetMs: number | undefined;
  /** The kept reading's error bound when it was read (half its round trip), and when. */
  #boundMs = Number.POSITIVE_INFINITY;
  #readAtMs = Number.NEGATIVE_INFINITY;
  /** The tightest bound any reading had: the network's floor. */
  #floorMs = Number.POSITIVE_INFINITY;
  #readings = 0;
  #triedAtMs = Number.NEGATIVE_INFINITY;
  #sampling: Promise<void> | undefined;

  constructor(
    private readonly monotonicMs: () => number,
    private readonly refreshMs = 60_000,
  ) {}

  /** Where an acquire begun at `startedMs` (monotonic) stands on the masters' clock; undefined before a first reading. */
  placeOf(startedMs: number): number | undefined {
    return this.#offsetMs === undefined ? undefined : startedMs + this.#offsetMs;
  }

  /** Time for a reading: none kept, one older than `refreshMs`, or a second after one of the first or a loose one. */
  get stale(): boolean {
    const now = this.monotonicMs();
    if (now - this.#readAtMs >= this.refreshMs || now - this.#triedAtMs >= this.refreshMs) return true;
    const loose = this.#agedBound(now) > 2 * this.#floorMs + LOOSE_SLACK_MS;
    return (this.#readings < FIRST_READINGS || loose) && now - this.#triedAtMs >= RETRY_MS;
  }

  /**
   * Read the masters' clocks with `read`: offset their median, bound half their median round trip.
   * It replaces the kept reading if no looser than its aged bound, or if that one is older than
   * `refreshMs`. Concurrent calls share one reading; no answer keeps what there was.
   */
  sample(read: () => Promise<readonly ClockReading[]>): Promise<void> {
    this.#sampling ??= read()
      .then((answers) => {
        const offset = medianOf(answers.map((answer) => answer.offsetMs));
        const roundTrip = medianOf(answers.map((answer) => answer.roundTripMs));
        if (offset === undefined || roundTrip === undefined) return;
        const now = this.monotonicMs();
        const bound = roundTrip / 2;
        this.#readings++;
        this.#floorMs = Math.min(this.#floorMs, bound);
        if (bound <= this.#agedBound(now) || now - this.#readAtMs >= this.refreshMs) {
          this.#offsetMs = offset;
          this.#boundMs = bound;
          this.#readAtMs = now;
        }
      })
      .catch(() => undefined)
      .finally(() => {
        this.#triedAtMs = this.monotonicMs();
        this.#sampling = undefined;
      });
    return this.#sampling;
  }

  /** The kept reading's bound now: what it was, plus the drift allowance since. */
  #agedBound(now: number): number {
    return this.#boundMs + DRIFT_RATE * (now - this.#readAtMs);
  }
}

/** The median of `values` (the mean of the middle two for an even count); undefined for none. */
export function medianOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
