/**
 * The INFO check on each new connection to a master: lock commands wait for it, and leave in the
 * order they came; and what an INFO reply says about the server besides its run (restart-guard.ts):
 * cluster mode, and a replica where the Sentinels named a master.
 */
import type { Cancellation } from '../../protocol/fan-out.js';

/** The INFO read on a connection, while lock commands wait for it (MasterVoter.#checked). */
export interface InfoCheck {
  readonly done: Promise<void>;
  settled: boolean;
  waiting: number;
}

/** `cluster_enabled:1`: keys live in hash slots, multi-key scripts fail there. */
export const clusterEnabled = (info: string): boolean => /^cluster_enabled:1\r?$/m.test(info);

/** `role:slave`: a replica (after a failover, or named by a stale Sentinel). */
export const replicaRole = (info: string): boolean => /^role:slave\r?$/m.test(info);

export class InfoGate {
  /**
   * The INFO read on the latest connection, while it is in flight or lock commands still wait for
   * it: lock commands wait for it, and leave in the order they came (see after). Read on every
   * submit, so a field rather than a getter; only this class sets it.
   */
  pending: InfoCheck | undefined;

  /** Lock commands wait for `done` from now on (a new connection's INFO). */
  hold(done: Promise<void>): InfoCheck {
    const check = { done, settled: false, waiting: 0 };
    this.pending = check;
    return check;
  }

  /** The INFO read of `check` is over: dropped now unless commands still wait behind it. */
  settled(check: InfoCheck): void {
    check.settled = true;
    if (check.waiting === 0 && this.pending === check) this.pending = undefined;
  }

  /** `next()` once `check` is over (or the cancellation's reason as soon as it is cancelled). */
  async after<T>(check: InfoCheck, cancellation: Cancellation, next: () => Promise<T>): Promise<T> {
    // The check is dropped only once its last waiter has left: a command coming meanwhile waits
    // behind them, so commands reach the master in the order they were submitted (an earlier,
    // shorter extend must never land after a later one).
    check.waiting++;
    try {
      await untilCancelled(check.done, cancellation);
    } finally {
      if (--check.waiting === 0 && check.settled && this.pending === check) this.pending = undefined;
    }
    return next();
  }
}

/** `promise`, or the cancellation's reason as soon as it is cancelled. */
function untilCancelled<T>(promise: Promise<T>, cancellation: Cancellation): Promise<T> {
  if (cancellation.aborted) return Promise.reject(cancellation.reason);
  return new Promise<T>((resolve, reject) => {
    cancellation.onCancel(() => reject(cancellation.reason));
    // The listener goes before the caller resumes: it may set its own (Batcher.submit).
    promise.then(
      (value) => {
        cancellation.onCancel(undefined);
        resolve(value);
      },
      (error: unknown) => {
        cancellation.onCancel(undefined);
        reject(error);
      },
    );
  });
}
