/**
 * Observability: the events a Redlock emits (also published on `node:diagnostics_channel`, for
 * tools that watch every Redlock in the process) and the counters and percentiles behind
 * `redlock.stats()`. Nothing here does I/O; a payload is built only when someone listens.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import * as hdr from 'hdr-histogram-js';
import type { NodeError } from '../errors.js';
import type { AttemptRecord, NodeOutcome, NodeStatus } from '../protocol/outcomes.js';
import type { Lock } from '../lease/lock.js';
import type { NodeDownEvent, NodeUpEvent } from '../voters/master/health.js';

/** A lock was acquired (not re-entered: that makes no network call and emits nothing). */
export interface AcquiredEvent {
  readonly lock: Lock;
  readonly resources: readonly string[];
  /** Attempts it took (1 = first try). */
  readonly attempts: number;
  /** From the acquire call to the lock, ms: the time spent waiting for it. */
  readonly waitMs: number;
  /** The winning attempt: every master's outcome (its `fencing` round too, for fenced locks). */
  readonly attempt: AttemptRecord;
}

/** A lock was extended, by `extend()` or automatically. */
export interface ExtendedEvent {
  readonly lock: Lock;
  readonly resources: readonly string[];
  readonly automatic: boolean;
  /** The extend call's duration, ms (all its attempts). */
  readonly durationMs: number;
  readonly attempt: AttemptRecord;
}

/** A lock was released (`released: false` when no quorum still held it). */
export interface ReleasedEvent {
  readonly lock: Lock;
  readonly resources: readonly string[];
  readonly released: boolean;
  readonly heldBy: number;
  /** From acquired to this release, ms. */
  readonly heldMs: number;
  /** The release call's duration, ms. */
  readonly durationMs: number;
  readonly outcomes: readonly NodeOutcome[];
}

/**
 * A lock was lost while held: its validity ended (an auto-extending lock that could not be extended,
 * or a lock released only after its validity ended), or its Redlock was quit.
 */
export interface LostEvent {
  readonly lock: Lock;
  readonly resources: readonly string[];
  /** From acquired to the loss, ms. */
  readonly heldMs: number;
  /** The `LockLostError`: why, and the failed extend attempts with every master's outcome. */
  readonly error: Error;
}

/** An acquire or extend call failed (quorum not reached, lock lost, or cancelled). */
export interface FailedEvent {
  readonly operation: 'acquire' | 'extend';
  /** For a failed extend: the lock it tried to extend (it may still be valid). */
  readonly lock?: Lock;
  readonly resources: readonly string[];
  readonly durationMs: number;
  /** What the call rejected with: usually an `ExecutionError`, or the signal's reason. */
  readonly error: unknown;
  /** Its attempts, with every master's outcome (the last 100). */
  readonly attempts: readonly AttemptRecord[];
}

/** Events, by name: `redlock.on('acquired', (event) => …)`. */
export interface RedlockEvents {
  acquired: [AcquiredEvent];
  extended: [ExtendedEvent];
  released: [ReleasedEvent];
  lost: [LostEvent];
  failed: [FailedEvent];
  /**
   * A master or its connection failed; with no listener nothing is emitted. A failure that repeats
   * the previous one of the same master (every reconnect attempt to a master that stays down) is
   * emitted once: `redlock.health()` counts them all.
   */
  error: [NodeError];
  /** A master stopped being up: down (no usable connection) or suspect (stalled). Once per transition. */
  nodeDown: [NodeDownEvent];
  /** A master is up again, or for the first time (its first connection). Once per transition. */
  nodeUp: [NodeUpEvent];
}

export type RedlockEventName = keyof RedlockEvents;

/**
 * The same events on `node:diagnostics_channel`, for every Redlock in the process:
 * `diagnostics_channel.subscribe('redlock-quorum:lock:acquired', (event) => …)`. A channel without
 * subscribers costs one property read per event.
 */
export const channelNames: Readonly<Record<RedlockEventName, string>> = Object.freeze({
  acquired: 'redlock-quorum:lock:acquired',
  extended: 'redlock-quorum:lock:extended',
  released: 'redlock-quorum:lock:released',
  lost: 'redlock-quorum:lock:lost',
  failed: 'redlock-quorum:lock:failed',
  error: 'redlock-quorum:error',
  nodeDown: 'redlock-quorum:node:down',
  nodeUp: 'redlock-quorum:node:up',
});

export const channels = Object.fromEntries(
  Object.entries(channelNames).map(([event, name]) => [event, diagnosticsChannel.channel(name)]),
) as Record<RedlockEventName, diagnosticsChannel.Channel>;

/**
 * A listener's throw, which no caller can receive (the call that emitted goes on unchanged): an
 * uncaught exception on the next tick, as Node raises a throw from a diagnostics_channel subscriber
 * or an EventTarget listener. It crashes the process unless an 'uncaughtException' handler takes it.
 */
export function reportListenerError(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}

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
  readonly acquisitions = { attempted: 0, succeeded: 0, failed: 0, reentered: 0 };
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
    if (status === 'granted') counts.granted++;
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
