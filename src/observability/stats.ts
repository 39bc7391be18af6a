/**
 * The counters and percentiles behind `redlock.stats()`, since the Redlock was created. Nothing
 * here does I/O: the acquire, extend and release paths count into a StatsRecorder as they go.
 */
import * as hdr from 'hdr-histogram-js';
import { isYes, type NodeStatus } from '../protocol/outcomes.js';

/** Percentiles of a duration, ms (0 when nothing was recorded). */
export interface DurationSummary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** What one master answered, over every operation since the Redlock was created. */
export interface MasterStats {
  readonly node: string;
  readonly granted: number;
  /** `locked` and `queued` (acquire refused) and `lost` (extend/release found another value). */
  readonly refused: number;
  readonly timeout: number;
  readonly error: number;
}

/** `redlock.stats()`: counts since the Redlock was created. */
export interface RedlockStats {
  readonly acquisitions: {
    /** Acquire calls that went to the masters (re-entered ones are counted apart). */
    readonly attempted: number;
    readonly succeeded: number;
    readonly failed: number;
    readonly reentered: number;
    /** Of those that succeeded, the ones a majority of masters handed the lock to while they waited in line (issue 40). */
    readonly handed: number;
  };
  readonly extensions: { readonly succeeded: number; readonly failed: number; readonly automatic: number };
  readonly releases: number;
  /** Locks lost while held (see the `lost` event). */
  readonly losses: number;
  /** Locks acquired and neither released nor lost yet. */
  readonly held: number;
  /** Successful acquisitions: from the call to the lock, ms. */
  readonly waitMs: DurationSummary;
  /** Released or lost locks: from acquired to released (or lost), ms. */
  readonly holdMs: DurationSummary;
  /** Per master, in node order. */
  readonly masters: readonly MasterStats[];
}

interface MasterCounts {
  granted: number;
  refused: number;
  timeout: number;
  error: number;
}

/** Durations recorded in µs, to 2 significant digits: ~15 KB per histogram, whatever the count. */
function durationHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
    useWebAssembly: false,
  });
}

export class StatsRecorder {
  readonly acquisitions = { attempted: 0, succeeded: 0, failed: 0, reentered: 0, handed: 0 };
  readonly extensions = { succeeded: 0, failed: 0, automatic: 0 };
  releases = 0;
  losses = 0;
  readonly #wait = durationHistogram();
  readonly #hold = durationHistogram();
  readonly #masters: MasterCounts[];

  constructor(readonly nodes: readonly string[]) {
    this.#masters = nodes.map(() => ({ granted: 0, refused: 0, timeout: 0, error: 0 }));
  }

  /** For fan-outs: count one master's answer. */
  readonly answer = (index: number, status: NodeStatus): void => {
    const counts = this.#masters[index];
    if (!counts) return;
    if (isYes(status)) counts.granted++;
    else if (status === 'locked' || status === 'queued' || status === 'lost') counts.refused++;
    else if (status === 'timeout') counts.timeout++;
    else if (status === 'error') counts.error++;
  };

  acquired(waitMs: number): void {
    this.acquisitions.succeeded++;
    this.#wait.recordValue(micros(waitMs));
  }

  /** A held lock ended: released or lost. */
  ended(heldMs: number): void {
    this.#hold.recordValue(micros(heldMs));
  }

  snapshot(): RedlockStats {
    const { succeeded } = this.acquisitions;
    return {
      acquisitions: { ...this.acquisitions },
      extensions: { ...this.extensions },
      releases: this.releases,
      losses: this.losses,
      held: succeeded - Number(this.#hold.totalCount),
      waitMs: summary(this.#wait),
      holdMs: summary(this.#hold),
      masters: this.nodes.map((node, index) => ({ node, ...this.#masters[index]! })),
    };
  }
}

function micros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

function summary(histogram: hdr.Histogram): DurationSummary {
  const count = Number(histogram.totalCount);
  if (count === 0) return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const ms = (micros: number): number => Math.round(micros) / 1000;
  return {
    count,
    mean: ms(histogram.mean),
    p50: ms(histogram.getValueAtPercentile(50)),
    p90: ms(histogram.getValueAtPercentile(90)),
    p99: ms(histogram.getValueAtPercentile(99)),
    max: ms(histogram.maxValue),
  };
}
