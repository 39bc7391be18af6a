/**
 * Observability: the events a Redlock emits, also published on `node:diagnostics_channel` for
 * tools that watch every Redlock in the process (the counters behind `redlock.stats()` are in
 * stats.ts). Nothing here does I/O; a payload is built only when someone listens.
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import type { LockLostError, NodeError } from '../errors.js';
import type { AttemptRecord, NodeOutcome } from '../protocol/outcomes.js';
import type { Lock } from '../lease/lock.js';
import type { ClockJumpEvent, NodeDownEvent, NodeUpEvent } from '../voters/master/health.js';

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
  /** Masters that had confirmed the delete when the release resolved (ReleaseResult's). */
  readonly confirmedBy: number;
  /** @deprecated The same count as `confirmedBy`, by its former name. */
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
  /** Why, and the failed extend attempts with every master's outcome. */
  readonly error: LockLostError;
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
  /**
   * With `restartGuard.clockJumps`: a master's clock jumped against this process' monotonic clock
   * beyond the drift allowance, seen in a script call's answer. Forward: its vote is withheld for
   * `waitMs`. Backward: reported only (keys there outlive their ttl).
   */
  clockJump: [ClockJumpEvent];
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
  clockJump: 'redlock-quorum:node:clock-jump',
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
