/**
 * A held lock. Its methods delegate to the Redlock that made it; its timers (renewal, the
 * lock-lost signal) belong to its Lifetime.
 */
import { Lifetime, type Renewal } from './lifetime.js';
import type { Settings } from './settings.js';
import type { ReleaseResult } from './redlock.js';

/** The part of Redlock a Lock calls back into. */
export interface LockOwner {
  extend(lock: Lock, ttl: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
}

export class Lock {
  #released = false;
  #lifetime: Lifetime | undefined;

  constructor(
    private readonly owner: LockOwner,
    /** The resources (Redis keys) this lock holds, duplicates removed. */
    readonly resources: readonly string[],
    /** The random value (128 bits, hex) set on every key; unique to this attempt. */
    readonly value: string,
    /** Epoch ms (`Date.now()` basis) at which this lock's validity ends. */
    public expiration: number,
    /** Attempts used to acquire it (1 = first try). */
    readonly attempts: number,
    /** @internal the ttl of the last acquire or extend. */
    public ttlMs: number,
    /** @internal the per-call settings this lock was acquired with; extend and release use them too. */
    readonly callSettings: Partial<Settings>,
  ) {}

  /** True once `release()` was called: a released lock cannot be extended. */
  get released(): boolean {
    return this.#released;
  }

  /**
   * Aborts when this lock is lost — its validity ended, or (auto-extending locks) extending it
   * definitively failed — with a `LockLostError` as `signal.reason`. Not aborted by release.
   */
  get signal(): AbortSignal {
    this.#lifetime ??= new Lifetime(this, undefined);
    return this.#lifetime.signal;
  }

  /** True for a lock acquired with `autoExtend` (or by `using`), which extends itself until released. */
  get autoExtending(): boolean {
    return this.#autoExtending;
  }
  #autoExtending = false;

  /** @internal keep this lock alive until released. */
  keepAlive(renewal: Renewal): void {
    this.#lifetime?.stop();
    this.#autoExtending = true;
    this.#lifetime = new Lifetime(this, renewal);
  }

  /** @internal the lifetime, if any (Redlock stops them all on quit). */
  get lifetime(): Lifetime | undefined {
    return this.#lifetime;
  }

  /** @internal an extend succeeded. */
  extendedTo(expiration: number, ttlMs: number): void {
    this.expiration = expiration;
    this.ttlMs = ttlMs;
    this.#lifetime?.extended();
  }

  /** @internal release() was called. */
  markReleased(): void {
    this.#released = true;
    this.#lifetime?.stop();
  }

  /** Extend to `ttl` ms from now on a quorum; resolves to this lock with `expiration` moved. */
  extend(ttl: number): Promise<Lock> {
    return this.owner.extend(this, ttl);
  }

  /** Compare-and-delete on every master; resolves once a quorum answered. */
  release(): Promise<ReleaseResult> {
    return this.owner.release(this);
  }

  /** `await using lock = await redlock.acquire(…)` releases on scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.released) await this.release();
  }
}
