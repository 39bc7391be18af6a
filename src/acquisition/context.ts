/** What every call of one Redlock shares (masters, settings, clocks, stats, waiters, events), without the Redlock itself. */
import { RedlockClosedError, type LockLostError } from '../errors.js';
import type { Optional, Settings } from '../config/settings.js';
import type { RenewalScheduler } from '../lease/lifetime.js';
import type { Lock, LockOwner } from '../lease/lock.js';
import type { ReentrancyScope } from '../lease/reentrancy.js';
import type { RedlockEvents } from '../observability/events.js';
import type { StatsRecorder } from '../observability/stats.js';
import type { Clock } from '../protocol/validity.js';
import type { MasterClock } from './master-clock.js';
import type { Masters } from './masters.js';
import type { Notifier } from './waiting.js';

/** Emit a Redlock event, building its payload only if someone listens (redlock.ts). */
type Emit = <E extends keyof RedlockEvents>(event: E, payload: () => RedlockEvents[E][0]) => void;

export interface CallContext {
  readonly masters: Masters;
  /** The Redlock's own settings (each call's are resolved over them). */
  readonly settings: Optional<Settings>;
  readonly clock: Clock;
  readonly stats: StatsRecorder;
  readonly notifier: Notifier;
  /** Where this process' waiters stand in the masters' lines (master-clock.ts). */
  readonly masterClock: MasterClock;
  readonly renewals: RenewalScheduler;
  /** Per async chain: the resources held by enclosing `using()` routines, and by which lock. */
  readonly scope: ReentrancyScope;
  /** Aborted by quit(): wakes every acquire or extend sleeping between attempts. */
  readonly closing: AbortSignal;
  /** Some voter is a Redis Cluster: a lock's keys must share a slot (voters/cluster/slots.ts). */
  readonly clustered: boolean;
  /** What a Lock calls back into: the Redlock. */
  readonly owner: LockOwner;
  readonly emit: Emit;
}

/** quit() was called: no call starts, and no lock is handed out. */
export function assertOpen(context: CallContext): void {
  if (context.closing.aborted) throw new RedlockClosedError();
}

/** A lock's lifetime reports its loss (once); also a release after validity ended. */
export function lose(context: CallContext, lock: Lock, error: LockLostError): void {
  if (!lock.end()) return;
  const heldMs = context.clock.monotonicMs() - lock.acquiredAtMs;
  context.stats.losses++;
  context.stats.ended(heldMs);
  context.emit('lost', () => ({ lock, resources: lock.resources, heldMs, error }));
}
