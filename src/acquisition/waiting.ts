/**
 * Waiting without polling, in the order of the masters' queues. Every exclusive waiter holds a
 * ticket in each of its keys' queues on the masters (the script's contract); readers and permits
 * wait outside them. The release script announces every key it frees (a PUBLISH on each master)
 * with the ticket first in line there; a waiter sleeps until the first of: a majority of masters
 * naming its ticket (or naming nobody, where their queue is empty, for this process' waiter with
 * the oldest ticket of the key, and for every reader of it), the blocking key's PTTL, or
 * retryDelay ± jitter as a fallback (which also renews its ticket before it expires).
 *
 * So one release wakes one waiter, whichever process it is in, instead of every process's first
 * waiter, which split the masters' votes between them. Subscriber connections exist only while
 * someone waits.
 */
import { parseReleased } from '../script/codec.js';
import { onAnyAbort, startTimer } from '../protocol/timers.js';
import type { ReleaseListener, Subscription } from '../voters/voter.js';

export type Subscribe = (listener: ReleaseListener) => Subscription;

/** How long subscriptions outlive the last waiter, so a burst of waits does not churn connections. */
const IDLE_CLOSE_MS = 1_000;
/** What subscriptions taking count as, for a waiter: one release, reported by each master whose subscription took. */
const SUBSCRIBED = 'subscribed';

/**
 * What woke a waiter: a master named its ticket first in line (`turn`), a release with nobody in
 * line (`released`: others may have been woken by it too), subscriptions taking (`subscribed`: a
 * release may have been missed before), or its timer.
 */
export type WakeSource = 'turn' | 'released' | 'subscribed' | 'timeout';

export class Waiter {
  #wake: ((source: WakeSource) => void) | undefined;
  #pendingWake: WakeSource | undefined;
  /** Masters (a bit each) that reported a release naming it since it last woke. */
  #reportedBy = 0;
  /** The release that woke it last: the other masters' reports of it wake it no more. */
  #wokenFor: string | undefined;
  /** The value of this waiter's latest attempt: the rollback of its own attempt wakes nobody. */
  ownValue: string | undefined;

  constructor(
    readonly keys: readonly string[],
    /** Its place in the masters' queues (a reader's or a permit's names it in this process only). */
    readonly ticket: string,
    /** When its acquire began, on this process' monotonic clock: what the masters order tickets by. */
    readonly startedMs: number,
    private readonly notifier: Notifier,
    /** A reader: a release with nobody in line wakes every reader of the key, not only the oldest waiter. */
    readonly shared = false,
  ) {}

  /**
   * Sleep up to `ms`; resolves early when it is woken (at once if that happened since the last
   * sleep), saying what woke it. Rejects with the reason of the first of `signals` to abort (the
   * caller's signal, the Redlock being quit).
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

  /**
   * @internal master number `master` reports that `released` (a lock's or a ticket's release) left
   * one of the keys. It wakes once `needed` masters have (whatever releases they reported): an
   * attempt made at the first report would find the key still held on the others, and be refused.
   */
  report(released: string, master: number, needed: number, source: WakeSource): void {
    if (released === this.ownValue || released === this.#wokenFor) return;
    const bit = 2 ** master;
    if (Math.floor(this.#reportedBy / bit) % 2 === 0) this.#reportedBy += bit;
    if (bitCount(this.#reportedBy) < needed) return;
    this.#reportedBy = 0;
    this.#wokenFor = released;
    this.wake(source);
  }

  /** @internal wake it now (its sleep resolves, or the next one at once). */
  wake(source: WakeSource): void {
    if (this.#wake) this.#wake(source);
    else this.#pendingWake = source;
  }

  /** Stop waiting. */
  leave(): void {
    this.notifier.unregister(this);
  }
}

/**
 * The waiter of `queue` (not empty) with the oldest ticket: the one the masters' queues put first
 * among this process' waiters. A master whose queue is empty (it granted that waiter's attempt, or
 * never saw its ticket) announces a release naming nobody; reported to this waiter, it adds to the
 * masters that name it, so a waiter named by a minority, the others naming nobody, still wakes.
 */
function oldest(queue: readonly Waiter[], among: (waiter: Waiter) => boolean = () => true): Waiter | undefined {
  let first: Waiter | undefined;
  for (const waiter of queue) if (among(waiter) && (!first || waiter.startedMs < first.startedMs)) first = waiter;
  return first;
}
const exclusive = (waiter: Waiter): boolean => !waiter.shared;

/** The number of bits set in `bits` (a non-negative integer below 2^53). */
function bitCount(bits: number): number {
  let count = 0;
  for (let rest = bits; rest > 0; rest = Math.floor(rest / 2)) count += rest % 2;
  return count;
}

export class Notifier {
  /** Masters that must report a release before its waiter wakes: a majority. */
  readonly #needed: number;
  /** One listener per master, so a report says which master made it. */
  readonly #listeners: readonly ReleaseListener[];
  /** This process' waiters of each key, in the order they began waiting. */
  readonly #queues = new Map<string, Waiter[]>();
  readonly #tickets = new Map<string, Waiter>();
  #subscriptions: Subscription[] | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** One subscribe function per master. */
  constructor(private readonly subscribers: readonly Subscribe[]) {
    this.#needed = Math.floor(subscribers.length / 2) + 1;
    this.#listeners = subscribers.map((_, master) => this.#listenerOf(master));
  }

  /** Start waiting for `keys` with `ticket`, asked for at `startedMs` (monotonic); subscriptions open now if they are not open yet. */
  register(keys: readonly string[], ticket: string, startedMs: number, shared = false): Waiter {
    const waiter = new Waiter(keys, ticket, startedMs, this, shared);
    for (const key of keys) {
      const queue = this.#queues.get(key);
      if (queue) queue.push(waiter);
      else this.#queues.set(key, [waiter]);
    }
    this.#tickets.set(ticket, waiter);
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    // After close() (quit while an acquire was in flight) no new subscription: nothing would close it.
    if (!this.#closed) this.#subscriptions ??= this.subscribers.map((subscribe, master) => subscribe(this.#listeners[master]!));
    return waiter;
  }

  /**
   * `released` (a lock's value, or a ticket that left the queue) left `key` on master number
   * `master`, where `head` is first in line now: that waiter, if it is here, or with nobody in line
   * this process' waiter with the oldest ticket of the key, wakes once a majority of masters said so.
   */
  released(key: string, released: string, head: string | undefined, master: number): void {
    if (head !== undefined) this.turn(head, released, master);
    else {
      const queue = this.#queues.get(key);
      if (!queue) return;
      // The oldest exclusive waiter: the one a master's line would name (readers are not in it), so
      // these reports add up with those of masters that name it. Readers share: all of them wake.
      oldest(queue, exclusive)?.report(released, master, this.#needed, 'released');
      for (const waiter of queue) if (waiter.shared) waiter.report(released, master, this.#needed, 'released');
    }
  }

  /** Master number `master` named `head` first in line after `released` left (a release's reply says so too). */
  turn(head: string, released: string, master: number): void {
    this.#tickets.get(head)?.report(released, master, this.#needed, 'turn');
  }

  /** Someone in this process waits. */
  get waiting(): boolean {
    return this.#tickets.size > 0;
  }

  unregister(waiter: Waiter): void {
    for (const key of waiter.keys) {
      const queue = this.#queues.get(key);
      if (!queue) continue;
      const index = queue.indexOf(waiter);
      if (index < 0) continue;
      queue.splice(index, 1);
      if (queue.length === 0) this.#queues.delete(key);
    }
    this.#tickets.delete(waiter.ticket);
    if (this.#tickets.size === 0 && !this.#closed) {
      this.#idleTimer = setTimeout(() => void this.#unsubscribe(), IDLE_CLOSE_MS);
      this.#idleTimer.unref();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    await this.#unsubscribe();
  }

  #listenerOf(master: number): ReleaseListener {
    return {
      message: (message) => {
        const released = parseReleased(message);
        if (released) this.released(released.key, released.value, released.head, master);
      },
      // A release announced before the subscriptions took was missed: the oldest waiter of each
      // key tries once more, when a majority of them took.
      subscribed: () => {
        for (const queue of this.#queues.values()) oldest(queue)?.report(SUBSCRIBED, master, this.#needed, 'subscribed');
      },
    };
  }

  async #unsubscribe(): Promise<void> {
    const subscriptions = this.#subscriptions;
    this.#subscriptions = undefined;
    if (!subscriptions) return;
    await Promise.all(subscriptions.map((subscription) => subscription.close().catch(() => undefined)));
  }
}
