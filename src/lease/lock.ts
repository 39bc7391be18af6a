/**
 * A held lock: its methods delegate to the Redlock that made it, its timers to its Lifetime. A lock
 * re-entered inside a `using()` routine that holds its resources is a view of the outer lock: same
 * value and expiration, its release frees nothing, and its signal aborts when the outer lock is lost,
 * or released while the view is still in use.
 *
 * `expiration` moves only as the algorithm says: set from an attempt's start, lowered before an
 * extend is sent, raised only by a successful extend, and "now" once the lock is lost.
 */
import { setMaxListeners } from 'node:events';
import { LockLostError, LockReleasedError } from '../errors.js';
import type { NodeOutcome } from '../protocol/outcomes.js';
import { Lifetime, lockSignal, type LockSignal, type Renewal } from './lifetime.js';
import type { Optional, Settings } from '../config/settings.js';

export interface ReleaseResult {
  /** A quorum of masters deleted the lock's keys. False for a lock that had already expired. */
  readonly released: boolean;
  /**
   * Masters that had confirmed the delete when the release resolved (once a quorum had, or could
   * not), so a lock held on 5 of 5 may resolve with 3. The rest are `pending` in `outcomes`, their
   * answers recorded in `late` as they come: a paused master must not hold every release.
   */
  readonly confirmedBy: number;
  /** @deprecated The same count as `confirmedBy`, by its former name (it never counted every master that held the lock). */
  readonly heldBy: number;
  readonly outcomes: readonly NodeOutcome[];
}

/** The work done under a lock: `signal` aborts if the lock is lost (`signal.reason`, also `signal.error`). */
export type Routine<T, L extends Lock = Lock> = (signal: LockSignal, lock: L) => Promise<T> | T;

/**
 * What kind of lease a Lock is: `lock`, an exclusive hold (also a read-write lock's write hold), or
 * a primitive's kind from `LeaseKinds`: `read`, a shared hold, or `permit`, one of a semaphore's
 * permits, holding slot number `slot` (its `resources` name the slot's key).
 */
export type LeaseKind = LeaseKinds[keyof LeaseKinds];

/** Every kind of lease, by its `type`: each primitive adds its own here (TypeScript declaration merging). */
export interface LeaseKinds {
  lock: { readonly type: 'lock' };
}

export const EXCLUSIVE: LeaseKind = Object.freeze({ type: 'lock' });

/** A lock acquired with `{ fencing: true }` (a lock or a write hold): its `fencingToken` is always set. */
export type FencedLock = Lock & { readonly fencingToken: number };

/** The part of Redlock a Lock calls back into. */
export interface LockOwner {
  /** The masters, as `host:port`, in the order given. */
  readonly nodes: readonly string[];
  extend(lock: Lock, ttl: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
  /** The lock's lifetime found it lost (reported once): stats and the `lost` event. */
  reportLoss(lock: Lock, error: LockLostError): void;
}

/** What a Lock is made of: its acquire's grant, or for a view its outer lock's. */
type LockFields = Pick<Lock, 'resources' | 'value' | 'attempts' | 'ttlMs' | 'callSettings' | 'fencingToken' | 'quorum' | 'ticket' | 'lease'> & {
  /** Epoch ms at which its validity ends. */
  readonly expiration: number;
  /** For a view: the lock that really holds the resources. */
  readonly outer?: Lock;
};

export class Lock {
  /** The resources (Redis keys) this lock holds, duplicates removed. */
  readonly resources: readonly string[];
  /** The random value (128 bits, hex) set on every key; unique to this attempt. */
  readonly value: string;
  /** Attempts used to acquire it (1 = first try; 0 = re-entered, no network call). */
  readonly attempts: number;
  /** @internal the ttl of the last acquire or extend. */
  public ttlMs: number;
  /** @internal the per-call settings this lock was acquired with; extend and release use them too. */
  readonly callSettings: Optional<Settings>;
  /**
   * With `{ fencing: true }`: larger than the token of every earlier fenced lock on any of these
   * resources (`extend` keeps it). Pass it with each write to the protected storage, which rejects
   * tokens below the largest it has seen. Undefined without fencing.
   */
  readonly fencingToken: number | undefined;
  /** @internal masters that must agree for this lock (its call's quorum). */
  readonly quorum: number;
  /** @internal its acquire's ticket: a release takes it out of the masters' queues. */
  readonly ticket: string;
  /** An exclusive lock, a shared read hold, or a semaphore's permit. */
  readonly lease: LeaseKind;
  #expiration: number;
  #released = false;
  #lost = false;
  #lifetime: Lifetime<Lock> | undefined;
  #autoExtending = false;
  /** For a re-entered lock: the lock that really holds the resources. */
  readonly #outer: Lock | undefined;
  /** A view's own signal (created when read): follows the outer lock's loss and release. */
  #viewController: AbortController | undefined;
  #viewSignal: LockSignal | undefined;
  #stopFollowing: (() => void) | undefined;
  /** An outer lock's views still in use (unreleased). */
  readonly #views = new Set<Lock>();
  #ended = false;
  /** The first release's outcome: releasing again answers with it. */
  #release: Promise<ReleaseResult> | undefined;
  /** The extend in progress, if any: extends of one lock run one at a time. */
  #extending: Promise<unknown> | undefined;
  /** @internal when it was acquired, on the monotonic clock (for hold times). */
  acquiredAtMs = 0;

  /** @internal locks come from Redlock.acquire */
  constructor(
    private readonly owner: LockOwner,
    fields: LockFields,
  ) {
    this.resources = fields.resources;
    this.value = fields.value;
    this.attempts = fields.attempts;
    this.ttlMs = fields.ttlMs;
    this.callSettings = fields.callSettings;
    this.fencingToken = fields.fencingToken;
    this.quorum = fields.quorum;
    this.ticket = fields.ticket;
    this.lease = fields.lease;
    this.#expiration = fields.expiration;
    this.#outer = fields.outer;
  }

  /** @internal a view of `outer` for a nested acquire of resources it holds. */
  static viewOf(owner: LockOwner, outer: Lock, resources: readonly string[]): Lock {
    const { value, expiration, ttlMs, callSettings, fencingToken, quorum, ticket, lease } = outer;
    const view = new Lock(owner, { resources, value, expiration, attempts: 0, ttlMs, callSettings, fencingToken, outer, quorum, ticket, lease });
    outer.#views.add(view);
    return view;
  }

  /** @internal the masters (`host:port`) this lock was acquired on, in order. */
  get masters(): readonly string[] {
    return this.owner.nodes;
  }

  /** Epoch ms (`Date.now()` basis) at which this lock's validity ends. */
  get expiration(): number {
    return this.#outer ? this.#outer.expiration : this.#expiration;
  }

  /** True once `release()` was called (for a re-entered lock: or its outer lock's): a released lock cannot be extended. */
  get released(): boolean {
    return this.#released || (this.#outer?.released ?? false);
  }

  /** @internal valid in the library's eyes at `nowMs`: neither released nor lost, and before its expiration. */
  isLive(nowMs: number): boolean {
    if (this.#outer) return !this.#released && this.#outer.isLive(nowMs);
    return !this.#released && !this.#lost && nowMs < this.#expiration;
  }

  /** True for a lock re-entered inside a routine that already held its resources. */
  get reentered(): boolean {
    return this.#outer !== undefined;
  }

  /** @internal the lock that really holds the resources (itself, unless re-entered). */
  get holder(): Lock {
    return this.#outer ?? this;
  }

  /**
   * Aborts when this lock is lost — its validity ended, or (auto-extending locks) extending it
   * definitively failed — with a `LockLostError` as `signal.reason`. Not aborted by release.
   */
  get signal(): LockSignal {
    if (this.#outer) return (this.#viewSignal ??= this.#followOuter(this.#outer));
    this.#lifetime ??= new Lifetime<Lock>(this, undefined);
    return this.#lifetime.signal;
  }

  #followOuter(outer: Lock): LockSignal {
    const controller = (this.#viewController = new AbortController());
    const outerSignal = outer.signal;
    const follow = (): void => controller.abort(outerSignal.reason);
    if (outerSignal.aborted) follow();
    else if (this.#released) return lockSignal(controller); // released: nothing to follow any more
    else if (outer.released) this.#outerReleased();
    else {
      setMaxListeners(0, outerSignal); // one listener per view in use: a routine may re-enter many times
      outerSignal.addEventListener('abort', follow, { once: true });
      this.#stopFollowing = () => outerSignal.removeEventListener('abort', follow);
    }
    return lockSignal(controller);
  }

  /** A view still in use when its outer lock was released: from now on nothing protects it. */
  #outerReleased(): void {
    this.#stopFollowing?.();
    this.#viewController?.abort(
      new LockLostError(this.resources, 'the lock it re-entered was released while it was still in use', []),
    );
  }

  /** True for a lock acquired with `autoExtend` (or by `using`), which extends itself until released. */
  get autoExtending(): boolean {
    return this.#outer ? this.#outer.autoExtending : this.#autoExtending;
  }

  /** @internal keep this lock alive until released. */
  keepAlive(renewal: Renewal<Lock>): void {
    this.#lifetime?.stop();
    this.#autoExtending = true;
    this.#lifetime = new Lifetime<Lock>(this, renewal);
  }

  /**
   * @internal an extend is about to be sent: until it succeeds, the lock is valid no longer than
   * that extend would leave (a failed one may still shorten the keys later).
   */
  lowerExpiration(expiration: number): void {
    if (expiration >= this.#expiration) return;
    this.#expiration = expiration;
    this.#lifetime?.lowered();
  }

  /** @internal an extend succeeded; false (nothing changes) if the lock was lost or released meanwhile. */
  extendedTo(expiration: number, ttlMs: number): boolean {
    if (this.#lost || this.#released) return false;
    this.#expiration = expiration;
    this.ttlMs = ttlMs;
    this.#lifetime?.extended();
    return true;
  }

  /** @internal run `extend` after any extend of this lock still in progress. */
  queueExtend<T>(extend: () => Promise<T>): Promise<T> {
    const previous = this.#extending;
    const next = previous ? previous.then(extend, extend) : extend();
    this.#extending = next.catch(() => undefined);
    return next;
  }

  /** @internal release once: a second release answers with the first one's outcome. */
  releaseOnce(release: () => Promise<ReleaseResult>): Promise<ReleaseResult> {
    return (this.#release ??= release());
  }

  /** @internal its validity ended now (lost), if it had not already. */
  endValidity(): void {
    this.#expiration = Math.min(this.#expiration, Date.now());
  }

  /** @internal true the first time only: the lock's hold ended (released or lost), for statistics. */
  end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    return true;
  }

  /** @internal the masters say it is gone: end its validity and abort its signal with `error`. */
  lose(error: LockLostError): void {
    if (this.#outer) return this.#outer.lose(error);
    (this.#lifetime ??= new Lifetime<Lock>(this, undefined)).lose(error);
  }

  /** @internal its lifetime aborted the signal (after ending its validity): tell the Redlock. */
  reportLoss(error: LockLostError): void {
    this.#lost = true;
    this.owner.reportLoss(this, error);
  }

  /** @internal release() was called. */
  markReleased(): void {
    this.#released = true;
    this.#lifetime?.stop();
    for (const view of this.#views) view.#outerReleased();
    this.#views.clear();
  }

  /** Extend to `ttl` ms from now on a quorum; resolves to this lock with `expiration` moved. */
  async extend(ttl: number): Promise<this> {
    // A view extends the lock that holds the resources, unless it (or that lock) was released.
    if (this.#outer && this.released) throw new LockReleasedError(this.resources);
    await this.owner.extend(this.#outer ?? this, ttl);
    return this;
  }

  /**
   * Compare-and-delete on every master; resolves once a quorum answered. A re-entered lock's
   * release frees nothing (the outer holder keeps the resources) and makes no network call.
   */
  release(): Promise<ReleaseResult> {
    if (this.#outer) {
      this.#released = true;
      this.#stopFollowing?.();
      this.#outer.#views.delete(this);
      return Promise.resolve({ released: false, confirmedBy: 0, heldBy: 0, outcomes: [] });
    }
    return this.owner.release(this);
  }

  /** `await using lock = await redlock.acquire(…)` releases on scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
