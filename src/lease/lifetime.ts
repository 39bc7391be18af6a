/**
 * A lock's life after acquire: its renewal and its loss signal start and stop here, one object per
 * lock (as an etcd Session owns its lease). Renewals due together leave in one event-loop turn, so
 * batching sends them as one script call per master.
 */
import { ExecutionError, LockExpiredError, LockLostError } from '../errors.js';
import type { AttemptRecord } from '../protocol/outcomes.js';
import { startTimer, type CancelTimer } from '../protocol/timers.js';

/** Redlock's extend, which retries while the lock is valid and reports each failed attempt. */
type Extend<L extends Leased> = (lock: L, ttlMs: number, onFailedAttempt: (record: AttemptRecord) => void) => Promise<unknown>;

export interface Renewal<L extends Leased> {
  readonly ttlMs: number;
  /** Renew when validity falls to this, ms. */
  readonly thresholdMs: number;
  readonly extend: Extend<L>;
  readonly scheduler: RenewalScheduler;
}

/** What a lifetime sees of its lock (lock.ts): what it is on, until when, and how to end it. */
export interface Leased {
  readonly resources: readonly string[];
  /** When its validity ends, epoch ms. */
  readonly expiration: number;
  /** Its validity is over (it no longer reads as valid). */
  endValidity(): void;
  /** It is lost, with this error: its holder is told (once). */
  reportLoss(error: LockLostError): void;
}

/**
 * A lock's signal: a standard AbortSignal whose `reason` is the LockLostError, also readable as
 * `error` (node-redlock's name for it, so its `throw signal.error` works unchanged).
 */
export type LockSignal = AbortSignal & { readonly error: LockLostError | undefined };

/** AbortSignal's prototype plus `error`: one getter shared by every lock's signal, not one allocated per lock. */
const lockSignalPrototype = Object.create(AbortSignal.prototype, {
  error: {
    get(this: AbortSignal): unknown {
      return this.aborted ? this.reason : undefined;
    },
  },
}) as object;

/** The LockSignal of `controller`, which is only ever aborted with a LockLostError. */
export function lockSignal(controller: AbortController): LockSignal {
  return Object.setPrototypeOf(controller.signal, lockSignalPrototype) as LockSignal;
}

export class Lifetime<L extends Leased = Leased> {
  /** Made when the signal is first read, as most locks' never are (an AbortSignal is heavy); born aborted after a loss. */
  #controller: AbortController | undefined;
  #signal: LockSignal | undefined;
  #lostWith: LockLostError | undefined;
  #cancelExpiry: CancelTimer | undefined;
  #slot: number | undefined;
  #stopped = false;
  /** Failed attempts of the renewal in progress: the outcomes behind a loss. */
  #failedAttempts: AttemptRecord[] = [];

  /** `renewal` undefined: the lock is not extended automatically; the signal still reports expiry. */
  constructor(
    private readonly lock: L,
    private readonly renewal: Renewal<L> | undefined,
  ) {
    this.#armExpiry();
    this.#scheduleRenewal();
  }

  get signal(): LockSignal {
    if (this.#signal) return this.#signal;
    this.#controller = new AbortController();
    if (this.#lostWith) this.#controller.abort(this.#lostWith);
    return (this.#signal = lockSignal(this.#controller));
  }

  /** The lock was extended by hand: its validity moved. */
  extended(): void {
    this.#failedAttempts = [];
    if (this.#stopped) return;
    this.#armExpiry();
    this.#scheduleRenewal();
  }

  /** An extend about to be sent lowered the expiration: the signal aborts then, and a scheduled renewal moves up. */
  lowered(): void {
    if (this.#stopped) return;
    this.#armExpiry();
    if (this.#slot !== undefined) this.#scheduleRenewal();
  }

  /** Released (or never to be renewed again): stop every timer; the signal stays as it is. */
  stop(): void {
    this.#stopped = true;
    this.#cancelExpiry?.();
    if (this.#slot !== undefined) this.renewal?.scheduler.remove(this, this.#slot);
    this.#slot = undefined;
  }

  /** End the lock's validity, abort the signal with `error`, and stop. */
  lose(error: LockLostError): void {
    if (this.#stopped) return;
    this.stop();
    // Before the abort: its listeners must already read the lock as ended.
    this.lock.endValidity();
    this.#lostWith = error;
    this.#controller?.abort(error);
    this.lock.reportLoss(error);
  }

  /** Lost for a reason outside the masters (e.g. the Redlock was quit). */
  abandon(why: string): void {
    this.lose(new LockLostError(this.lock.resources, why, []));
  }

  /** Called by the scheduler when this lock's renewal slot comes. */
  renew(): void {
    this.#slot = undefined;
    const renewal = this.renewal;
    if (this.#stopped || !renewal) return;
    // On success Redlock.extend tells this lifetime (extended()), which schedules the next renewal.
    renewal
      .extend(this.lock, renewal.ttlMs, (record) => this.#failedAttempts.push(record))
      .catch((error: unknown) => this.lose(lostBecause(this.lock, error)));
  }

  #armExpiry(): void {
    this.#cancelExpiry?.();
    this.#cancelExpiry = startTimer(
      () => this.lose(new LockLostError(this.lock.resources, 'its validity ended before it was extended', this.#failedAttempts)),
      this.lock.expiration - Date.now(),
      true,
    );
  }

  #scheduleRenewal(): void {
    const renewal = this.renewal;
    if (!renewal) return;
    // A renewal that was in flight when the Redlock was quit: nothing will renew it again.
    if (renewal.scheduler.closed) return this.abandon('the Redlock was quit, so it is no longer extended');
    if (this.#slot !== undefined) renewal.scheduler.remove(this, this.#slot);
    this.#slot = renewal.scheduler.add(this, this.lock.expiration - renewal.thresholdMs);
  }
}

function lostBecause(lock: Leased, error: unknown): LockLostError {
  if (error instanceof LockLostError) return error;
  // Before ExecutionError, which it extends.
  if (error instanceof LockExpiredError) {
    return new LockLostError(lock.resources, 'its validity ended before it was extended', [], error);
  }
  if (error instanceof ExecutionError) return new LockLostError(lock.resources, error.message, error.attempts, error);
  const message = error instanceof Error ? error.message : String(error);
  return new LockLostError(lock.resources, `extending it failed: ${message}`, [], error);
}

/** A lifetime as the scheduler sees it: renewed when its slot comes, abandoned when the Redlock quits. */
export interface Scheduled {
  renew(): void;
  abandon(why: string): void;
}

/**
 * Renewals due in the same slot fire from one timer, in one event-loop turn, so batching sends them
 * to each master as one script call. A slot fires at its start: a renewal is at most one slot early,
 * never late. One due within a slot keeps its own time, or a short lock would renew back to back.
 */
export class RenewalScheduler {
  readonly #slots = new Map<number, { lifetimes: Set<Scheduled>; cancel: CancelTimer }>();
  /** Set by quit(): lifetimes that would schedule another renewal are abandoned instead. */
  closed = false;

  constructor(readonly slotMs = 50) {}

  /** Schedule `lifetime` to renew at `dueEpochMs` (rounded down to its slot unless due within one); returns the slot. */
  add(lifetime: Scheduled, dueEpochMs: number): number {
    const slot = dueEpochMs - Date.now() < this.slotMs ? Math.floor(dueEpochMs) : Math.floor(dueEpochMs / this.slotMs) * this.slotMs;
    let entry = this.#slots.get(slot);
    if (!entry) {
      entry = { lifetimes: new Set(), cancel: startTimer(() => this.#fire(slot), slot - Date.now(), true) };
      this.#slots.set(slot, entry);
    }
    entry.lifetimes.add(lifetime);
    return slot;
  }

  remove(lifetime: Scheduled, slot: number): void {
    const entry = this.#slots.get(slot);
    if (!entry) return;
    entry.lifetimes.delete(lifetime);
    if (entry.lifetimes.size === 0) {
      entry.cancel();
      this.#slots.delete(slot);
    }
  }

  /** Every lifetime still scheduled (for quit). */
  get scheduled(): Scheduled[] {
    return [...this.#slots.values()].flatMap((entry) => [...entry.lifetimes]);
  }

  #fire(slot: number): void {
    const entry = this.#slots.get(slot);
    this.#slots.delete(slot);
    for (const lifetime of entry?.lifetimes ?? []) lifetime.renew();
  }
}
