/** What the demo's parent and its worker processes say to each other over IPC. */
import type { RedlockStats } from '../src/index.js';

export interface WorkerCounts {
  /** Critical sections that wrote the counter under a valid lock. */
  sections: number;
  /** Acquire calls that gave up because others held the lock in every retry (ResourceLockedError). */
  heldByOthers: number;
  /** Acquire calls that gave up because too few masters answered (down, paused, timing out: ExecutionError). */
  mastersUnavailable: number;
  /** Locks acquired whose validity ran out before the write (the write was skipped). */
  expiredBeforeWrite: number;
}

export type WorkerMessage =
  /** Loaded and connected; waiting for `go`. */
  | { type: 'ready' }
  /** Sent every PROGRESS_MS while running. */
  | ({ type: 'progress'; stats: RedlockStats } & WorkerCounts)
  /** The last message: final counts, every acquire latency (ms) and the final stats. */
  | ({ type: 'done'; stats: RedlockStats; acquireMs: number[] } & WorkerCounts);

/** Start now, for durationMs (all workers get it at the same moment). */
export interface GoMessage {
  type: 'go';
  durationMs: number;
}

export const PROGRESS_MS = 250;
