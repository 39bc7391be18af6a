/**
 * What the scenarios drive: a contender (a library set up one way) that acquires and releases. And
 * ours as one, over a Redlock of any build (bench/libraries.ts's `ours`, bench/versions.ts's two builds).
 */
import type { Redlock } from '../src/index.js';

export interface Held {
  release(): Promise<void>;
}

export interface Contender {
  /**
   * Acquire `key` for `ttlMs`; rejects if the library gives up. S8's contenders take a permit of
   * the semaphore `key` (limit SEMAPHORE_LIMIT), S9's a write hold.
   */
  acquire(key: string, ttlMs: number): Promise<Held>;
  /** S9: a read hold on `key` (shared where the library has read-write locks). */
  read?(key: string, ttlMs: number): Promise<Held>;
  close(): Promise<void>;
}

/** Ours: `redlock.acquire` and `lock.release`, with fencing tokens if asked; `afterQuit` closes what else it was given. */
export function redlockContender(redlock: Redlock, fencing = false, afterQuit?: () => Promise<void>): Contender {
  redlock.on('error', () => undefined); // faults and refusals are in the outcomes; the bench counts them
  return {
    acquire: async (key, ttlMs) => {
      const lock = await redlock.acquire(key, ttlMs, fencing ? { fencing } : undefined);
      return { release: async () => void (await lock.release()) };
    },
    close: async () => {
      await redlock.quit();
      await afterQuit?.();
    },
  };
}
