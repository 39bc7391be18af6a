/** One master's answer to a reading: its TIME minus the round trip's midpoint, and the round trip, both in ms. */
export interface ClockReading {
  readonly offsetMs: number;
  readonly roundTripMs: number;
}

/** How fast the offset may move, at most, between the client's monotonic clock and a master's (100 ppm). */
const DRIFT_RATE = 1e-4;
/** The first readings of a process (`FIRST_READINGS`), and a loose one, are followed by another this soon. */
const RETRY_MS = 1_000;
const FIRST_READINGS = 3;
/** A reading is loose when its error bound is this much above twice the tightest one seen (ms). */
const LOOSE_SLACK_MS = 0.5;

/**
 * The masters' clock as this process reads it: where its waiters stand in the masters' lines.
 *
 * A ticket's place must not depend on any client's wall clock (a process 10 minutes behind would
 * otherwise always go first), yet every master must give a ticket the same place, or masters that
 * order two near-simultaneous waiters differently split their votes and wake neither. So a place is
 * when the acquire began on the masters' clock: this process' monotonic start plus the offset from
 * its monotonic clock to the median of the masters' TIME. The median is the masters' own (a minority
 * of masters with wild clocks does not move it); a client's clock enters only through its rate.
 *
 * A reading is only as good as its round trip: the master read TIME somewhere inside it, so half the
 * round trip bounds the error. A process whose event loop was busy while it read (at start-up, under
 * load) would otherwise place its waiters up to half that stall early, for the whole `refreshMs`,
 * and go first in every line of a hot key. So the
 * tightest reading is kept, its bound growing with the drift allowance as it ages; the first readings
 * and any loose one are followed by another a second later, and every reading is renewed after `refreshMs`.
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
   * Read the masters' clocks with `read`, which resolves to the answers of the masters that
   * answered. The reading's offset is their median, its bound half their median round trip; it
   * replaces the kept one when its bound is no wider than the kept one's aged bound, or the kept one
   * is older than `refreshMs`. Concurrent calls share one reading; no answer keeps what there was.
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
