/**
 * A held lock. Its methods delegate to the Redlock that made it; it owns no timers.
 */
import type { Settings } from './settings.js';
import type { ReleaseResult } from './redlock.js';

/** The part of Redlock a Lock calls back into. */
export interface LockOwner {
  extend(lock: Lock, ttl: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
}

export class Lock {
  /** @internal set by release(): a released lock cannot be extended. */
  released = false;

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
