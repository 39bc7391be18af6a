/**
 * The resources held by the `using()` routines enclosing an async chain, and by which lock, so a
 * nested acquire of what an outer routine holds re-enters it instead of waiting for itself.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ReentrancyError } from '../errors.js';
import type { Lock } from './lock.js';

export class ReentrancyScope {
  readonly #store = new AsyncLocalStorage<ReadonlyMap<string, Lock>>();

  /** `epochMs`: now on the clock a lock's validity is read on. */
  constructor(private readonly epochMs: () => number) {}

  /**
   * The lock an enclosing `using()` routine holds all of `keys` with, if any (and still valid): an
   * exclusive one, or for a read (`toRead`) a read hold too. Throws ReentrancyError for a partial
   * overlap, which would otherwise wait for itself.
   */
  heldFor(keys: readonly string[], toRead: boolean): Lock | undefined {
    const scope = this.#store.getStore();
    if (!scope) return undefined;
    // A read hold never lets an exclusive hold in: that would be two holders, one of them a writer.
    const holders = keys.map((key) => scope.get(key)).map((lock) => (lock && (toRead || lock.lease.type === 'lock') ? lock : undefined));
    const nowMs = this.epochMs();
    // A released or lost lock is never re-entered: the call goes to the masters instead.
    const live = (lock: Lock | undefined): lock is Lock => lock !== undefined && lock.isLive(nowMs);
    if (!holders.some(live)) return undefined;
    const first = holders[0];
    if (live(first) && holders.every((lock) => lock === first)) return first;
    throw new ReentrancyError(keys, keys.filter((_, i) => live(holders[i])));
  }

  /** Run `routine` with `lock` holding its resources in this chain's scope (on top of the enclosing ones). */
  run<T>(lock: Lock, routine: () => T): T {
    const scope = new Map(this.#store.getStore());
    for (const key of lock.resources) scope.set(key, lock.holder);
    return this.#store.run(scope, routine);
  }
}
