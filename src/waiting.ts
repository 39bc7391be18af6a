/**
 * Waiting without polling. The release script announces every key it deletes (a PUBLISH on each
 * master); a waiter sleeps until the first of: such an announcement for one of its keys, the
 * blocking key's PTTL, or retryDelay ± jitter as a fallback.
 *
 * Within one process waiters queue per key, first come first served: an announcement wakes only
 * the longest-waiting waiter of that key (the others would only collide with it), and a new
 * acquire of a key that already has waiters here queues behind them instead of barging in.
 * Subscriber connections exist only while someone waits.
 */
import { parseReleased } from './scripts/index.js';
import { onAnyAbort, startTimer } from './timers.js';

/** One master's subscription to release announcements; `close` ends it even while it connects. */
export interface Subscription {
  close(): Promise<void>;
}
export type Subscribe = (onMessage: (message: string) => void) => Subscription;

/** How long subscriptions outlive the last waiter, so a burst of waits does not churn connections. */
const IDLE_CLOSE_MS = 1_000;
/** Announcements remembered to ignore repeats (each master announces the same release). */
const SEEN_LIMIT = 4_096;

/** Who woke a waiter: a release in this process, or a master's announcement (another process). */
export type WakeSource = 'local' | 'remote' | 'timeout';

export class Waiter {
  #wake: ((source: WakeSource) => void) | undefined;
  #pendingWake: WakeSource | undefined;
  /** The value of this waiter's latest attempt: the rollback of its own attempt wakes nobody. */
  ownValue: string | undefined;

  constructor(
    readonly keys: readonly string[],
    private readonly notifier: Notifier,
  ) {}

  /**
   * Sleep up to `ms`; resolves early when one of the keys is released (at once if that happened
   * since the last sleep), saying what woke it. Rejects with the reason of the first of `signals`
   * to abort (the caller's signal, the Redlock being quit).
   */
  sleep(ms: number, ...signals: readonly (AbortSignal | undefined)[]): Promise<WakeSource> {
    const aborted = signals.find((signal) => signal?.aborted);
    if (aborted) return Promise.reject(aborted.reason);
    const pending = this.#pendingWake;
    if (pending) {
      this.#pendingWake = undefined;
      return Promise.resolve(pending);
    }
    return new Promise<WakeSource>((resolve, reject) => {
      const done = (): void => {
        cancelTimer();
        stopListening();
        this.#wake = undefined;
      };
      const stopListening = onAnyAbort(signals, (reason) => {
        done();
        reject(reason);
      });
      const cancelTimer = startTimer(() => {
        done();
        resolve('timeout');
      }, ms);
      this.#wake = (source) => {
        done();
        resolve(source);
      };
    });
  }

  /** @internal a release of one of the keys was announced. */
  wake(source: WakeSource): void {
    if (this.#wake) this.#wake(source);
    else this.#pendingWake = source;
  }

  /** Stop waiting. Unless it `acquired`, the next waiter of its keys gets the turn. */
  leave(acquired: boolean): void {
    this.notifier.unregister(this, acquired);
  }
}

export class Notifier {
  readonly #queues = new Map<string, Waiter[]>();
  /**
   * Releases already seen (each master announces it, and this process may have done it): two
   * generations, the older dropped whole when the newer fills, so remembering costs O(1). (One Set
   * trimmed by its oldest entry walked the holes its deletions left: ~13 µs per release in profiles.)
   */
  #seen = new Set<string>();
  #seenBefore = new Set<string>();
  #waiters = 0;
  #subscriptions: Subscription[] | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** One subscribe function per master. */
  constructor(private readonly subscribers: readonly Subscribe[]) {}

  /** Start waiting for `keys`; subscriptions open now if they are not open yet. */
  register(keys: readonly string[]): Waiter {
    const waiter = new Waiter(keys, this);
    for (const key of keys) {
      const queue = this.#queues.get(key);
      if (queue) queue.push(waiter);
      else this.#queues.set(key, [waiter]);
    }
    this.#waiters++;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    // After close() (quit while an acquire was in flight) no new subscription: nothing would close it.
    if (!this.#closed) this.#subscriptions ??= this.subscribers.map((subscribe) => subscribe((message) => this.#announced(message)));
    return waiter;
  }

  /** True when someone in this process already waits for one of `keys` (a new acquire queues behind). */
  hasWaiters(keys: readonly string[]): boolean {
    return keys.some((key) => this.#queues.has(key));
  }

  /** A release of `value` on `key` (announced by a master, or done by this process). */
  released(key: string, value: string, source: WakeSource): void {
    // Nobody waits for it: nothing to wake or remember (a later waiter woken by another master's
    // announcement of this release only tries once more).
    const first = this.#queues.get(key)?.[0];
    if (!first) return;
    const id = `${value}:${key}`;
    if (this.#seen.has(id) || this.#seenBefore.has(id)) return;
    this.#seen.add(id);
    if (this.#seen.size >= SEEN_LIMIT) {
      this.#seenBefore = this.#seen;
      this.#seen = new Set();
    }
    if (first.ownValue !== value) first.wake(source);
  }

  unregister(waiter: Waiter, acquired: boolean): void {
    for (const key of waiter.keys) {
      const queue = this.#queues.get(key);
      if (!queue) continue;
      const index = queue.indexOf(waiter);
      if (index < 0) continue;
      queue.splice(index, 1);
      if (queue.length === 0) this.#queues.delete(key);
      // The first in line left without the lock (cancelled, or out of retries): pass the turn on.
      else if (index === 0 && !acquired) queue[0]!.wake('local');
    }
    if (--this.#waiters === 0 && !this.#closed) {
      this.#idleTimer = setTimeout(() => void this.#unsubscribe(), IDLE_CLOSE_MS);
      this.#idleTimer.unref();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    await this.#unsubscribe();
  }

  #announced(message: string): void {
    const released = parseReleased(message);
    if (released) this.released(released.key, released.value, 'remote');
  }

  async #unsubscribe(): Promise<void> {
    const subscriptions = this.#subscriptions;
    this.#subscriptions = undefined;
    if (!subscriptions) return;
    await Promise.all(subscriptions.map((subscription) => subscription.close().catch(() => undefined)));
  }
}
