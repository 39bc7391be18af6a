/**
 * What the scenarios drive: a contender (a library set up one way) that acquires and releases. And
 * ours as one, over a Redlock of any build (bench/libraries.ts's `ours`, bench/versions.ts's two builds).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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

/** A contender label for ours from another build (bench/versions.ts): this, then the path of its dist/index.js. */
export const BUILD_LABEL = 'ours@';

/**
 * The bench's `ours` (bench/libraries.ts: node-redis clients it makes from `urls`, batching on), from
 * the build at `path` (a dist/index.js) rather than ../dist: each of bench/versions.ts's two builds.
 */
export async function oursFromBuild(path: string, urls: readonly string[]): Promise<Contender> {
  const { Redlock: Built } = (await import(pathToFileURL(resolve(path)).href)) as typeof import('../src/index.js');
  return redlockContender(new Built([...urls], { batching: true }));
}
