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
 * Two masters' clocks agree when their readings are at most this far apart beyond their round trips'
 * uncertainty (ms): NTP keeps sane clocks far closer; a wild one is seconds or minutes off.
 */
export const CLOCKS_AGREE_MS = 50;

/**
 * The masters' clock as this process reads it: where its waiters stand in the masters' lines.
 *
 * A ticket's place must not depend on a client's wall clock (one 10 minutes behind would always go
 * first), yet every master must give it the same place, or masters ordering two waiters differently
 * split their votes and wake neither. So a place is the acquire's monotonic start plus the offset to
 * the median of a majority of all the masters whose TIMEs agree: such a majority holds at least one
 * sane clock, so a minority of wild clocks cannot move it. The median of whichever masters answered
 * would not do: of two answers, one 60 s behind, it is the mean, 30 s off. A reading without such a
 * majority is dropped (the kept one, if any, stays) and tried again at a wait a second later or more.
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
    /** How many masters there are: a reading needs a majority of them agreeing. */
    private readonly masters: number,
    private readonly refreshMs = 60_000,
  ) {}

  /** Where an acquire begun at `startedMs` (monotonic) stands on the masters' clock; undefined before a first reading. */
  placeOf(startedMs: number): number | undefined {
    return this.#offsetMs === undefined ? undefined : startedMs + this.#offsetMs;
  }

  /**
   * Time for a reading: none kept, one older than `refreshMs`, or one of the first or a loose one;
   * never within a second of the last try, whatever came of it (no answer, or no agreeing majority:
   * otherwise every wait of every waiter would read the clocks again).
   */
  get stale(): boolean {
    const now = this.monotonicMs();
    if (now - this.#triedAtMs < RETRY_MS) return false;
    if (now - this.#readAtMs >= this.refreshMs || now - this.#triedAtMs >= this.refreshMs) return true;
    const loose = this.#agedBound(now) > 2 * this.#floorMs + LOOSE_SLACK_MS;
    return this.#readings < FIRST_READINGS || loose;
  }

  /**
   * Read the masters' clocks with `read`: offset the median of an agreeing majority, bound half their
   * median round trip. It replaces the kept reading if no looser than its aged bound, or if that one is
   * older than `refreshMs`. Concurrent calls share one reading; no agreeing majority keeps what there was.
   */
  sample(read: () => Promise<readonly ClockReading[]>): Promise<void> {
    this.#sampling ??= read()
      .then((answers) => {
        const agreeing = agreeingMajority(answers, this.masters);
        const offset = medianOf(agreeing.map((answer) => answer.offsetMs));
        const roundTrip = medianOf(agreeing.map((answer) => answer.roundTripMs));
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

/**
 * The largest group of `answers` whose clocks agree, if it is a majority of all `masters`, else none.
 * Each answer allows the offsets within half its round trip plus half CLOCKS_AGREE_MS; a group agrees
 * when one offset is allowed by all, and the largest such group shares the left end of one of them.
 */
function agreeingMajority(answers: readonly ClockReading[], masters: number): readonly ClockReading[] {
  const reachMs = (answer: ClockReading): number => answer.roundTripMs / 2 + CLOCKS_AGREE_MS / 2;
  let largest: readonly ClockReading[] = [];
  for (const candidate of answers) {
    const sharedMs = candidate.offsetMs - reachMs(candidate);
    const group = answers.filter((answer) => Math.abs(answer.offsetMs - sharedMs) <= reachMs(answer));
    if (group.length > largest.length) largest = group;
  }
  return largest.length > masters / 2 ? largest : [];
}

/** The median of `values` (the mean of the middle two for an even count); undefined for none. */
export function medianOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
