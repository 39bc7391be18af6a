/**
 * A held lock. Its methods delegate to the Redlock that made it; its timers (renewal, the
 * lock-lost signal) belong to its Lifetime. A lock re-entered inside a `using()` routine that
 * already holds its resources is a view of the outer lock: same value, expiration and signal, and
 * its release frees nothing.
 */
import type { LockLostError } from './errors.js';
import { Lifetime, type LockSignal, type Renewal } from './lifetime.js';
import type { Settings } from './settings.js';
import type { ReleaseResult } from './redlock.js';

/** The part of Redlock a Lock calls back into. */
export interface LockOwner {
  /** The masters, as `host:port`, in the order given. */
  readonly nodes: readonly string[];
  extend(lock: Lock, ttl: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
  /** The lock's lifetime found it lost (reported once). */
  lost(lock: Lock, error: LockLostError): void;
}

export class Lock {
  #expiration: number;
  #released = false;
  #lifetime: Lifetime | undefined;
  #autoExtending = false;
  /** For a re-entered lock: the lock that really holds the resources. */
  readonly #outer: Lock | undefined;
  #ended = false;
  /** @internal when it was acquired, on the monotonic clock (for hold times). */
  acquiredAtMs = 0;

  /** @internal locks come from Redlock.acquire */
  constructor(
    private readonly owner: LockOwner,
    /** The resources (Redis keys) this lock holds, duplicates removed. */
    readonly resources: readonly string[],
    /** The random value (128 bits, hex) set on every key; unique to this attempt. */
    readonly value: string,
    expiration: number,
    /** Attempts used to acquire it (1 = first try; 0 = re-entered, no network call). */
    readonly attempts: number,
    /** @internal the ttl of the last acquire or extend. */
    public ttlMs: number,
    /** @internal the per-call settings this lock was acquired with; extend and release use them too. */
    readonly callSettings: Partial<Settings>,
    /**
     * For a lock acquired with `{ fencing: true }`: a number larger than the token of every earlier
     * fenced lock on any of these resources. Pass it with each write to the protected storage, which
     * rejects writes carrying a token below the largest it has seen. Undefined without fencing.
     * `extend` keeps it.
     */
    readonly fencingToken: number | undefined = undefined,
    outer?: Lock,
    /** @internal masters that must agree for this lock (its call's quorum). */
    readonly quorum: number = Math.floor(owner.nodes.length / 2) + 1,
  ) {
    this.#expiration = expiration;
    this.#outer = outer;
  }

  /** @internal a view of `outer` for a nested acquire of resources it holds. */
  static viewOf(owner: LockOwner, outer: Lock, resources: readonly string[]): Lock {
    return new Lock(owner, resources, outer.value, outer.expiration, 0, outer.ttlMs, outer.callSettings, outer.fencingToken, outer, outer.quorum);
  }

  /** @internal the masters (`host:port`) this lock was acquired on, in order. */
  get masters(): readonly string[] {
    return this.owner.nodes;
  }

  /** Epoch ms (`Date.now()` basis) at which this lock's validity ends. */
  get expiration(): number {
    return this.#outer ? this.#outer.expiration : this.#expiration;
  }

  /** True once `release()` was called: a released lock cannot be extended. */
  get released(): boolean {
    return this.#released;
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
    if (this.#outer) return this.#outer.signal;
    this.#lifetime ??= new Lifetime(this, undefined);
    return this.#lifetime.signal;
  }

  /** True for a lock acquired with `autoExtend` (or by `using`), which extends itself until released. */
  get autoExtending(): boolean {
    return this.#outer ? this.#outer.autoExtending : this.#autoExtending;
  }

  /** @internal keep this lock alive until released. */
  keepAlive(renewal: Renewal): void {
    this.#lifetime?.stop();
    this.#autoExtending = true;
    this.#lifetime = new Lifetime(this, renewal);
  }

  /** @internal an extend succeeded. */
  extendedTo(expiration: number, ttlMs: number): void {
    this.#expiration = expiration;
    this.ttlMs = ttlMs;
    this.#lifetime?.extended();
  }

  /** @internal true the first time only: the lock's hold ended (released or lost), for statistics. */
  end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    return true;
  }

  /** @internal its lifetime aborted the signal. */
  lost(error: LockLostError): void {
    this.owner.lost(this, error);
  }

  /** @internal release() was called. */
  markReleased(): void {
    this.#released = true;
    this.#lifetime?.stop();
  }

  /** Extend to `ttl` ms from now on a quorum; resolves to this lock with `expiration` moved. */
  async extend(ttl: number): Promise<Lock> {
    if (this.#outer) {
      await this.owner.extend(this.#outer, ttl);
      return this;
    }
    return this.owner.extend(this, ttl);
  }

  /**
   * Compare-and-delete on every master; resolves once a quorum answered. A re-entered lock's
   * release frees nothing (the outer holder keeps the resources) and makes no network call.
   */
  release(): Promise<ReleaseResult> {
    if (this.#outer) {
      this.#released = true;
      return Promise.resolve({ released: false, heldBy: 0, outcomes: [] });
    }
    return this.owner.release(this);
  }

  /** `await using lock = await redlock.acquire(…)` releases on scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#released) await this.release();
  }
}
