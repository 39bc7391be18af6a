/**
 * Waiting without polling, in the order of the masters' queues. Exclusive waiters hold a ticket in
 * their keys' queues on the masters; readers and permits wait outside them, leaving only a mark. A
 * release announces each key it frees where the key has a queue (a ticket or a mark in it; no queue,
 * no announcement) with the ticket now first in line there. A waiter wakes once a majority of masters
 * named it, or each master that refused its latest attempt when fewer did (no other master has it in
 * line to name), or at its timer; a master whose queue holds no live ticket names nobody, which wakes
 * this process' oldest waiter of the key, and its readers. So one release wakes one waiter, in
 * whichever process, rather than one per process that would split the votes. Subscriber connections
 * exist only while someone waits.
 */
import { handOffOf, parseReleased } from '../script/codec.js';
import { onAnyAbort, startTimer } from '../protocol/timers.js';
import type { ReleaseListener, Subscription } from '../voters/voter.js';

export type Subscribe = (listener: ReleaseListener) => Subscription;

/** How long subscriptions outlive the last waiter, so a burst of waits does not churn connections. */
const IDLE_CLOSE_MS = 1_000;
/** Subscriptions taking count, for a waiter, as one release reported by each master whose subscription took. */
const SUBSCRIBED = 'subscribed';

/**
 * What woke a waiter: a master named its ticket first in line (`turn`), a release with nobody in
 * line (`released`: others may have been woken by it too), subscriptions taking (`subscribed`: a
 * release may have been missed before), a majority of masters handing it the key (`handed`: see
 * handedBy), or its timer.
 */
export type WakeSource = 'turn' | 'released' | 'subscribed' | 'handed' | 'timeout';

export class Waiter {
  #wake: ((source: WakeSource) => void) | undefined;
  #pendingWake: WakeSource | undefined;
  /** Masters that reported a release naming it since it last woke. */
  readonly #reportedBy = new Set<number>();
  /** The release that woke it last: the other masters' reports of it wake it no more. */
  #wokenFor: string | undefined;
  /** The value of this waiter's latest attempt: the rollback of its own attempt wakes nobody. */
  ownValue: string | undefined;
  /** The value whose hand-offs count (its latest refused attempt's, while it waits), and the masters that handed it. */
  #expected: string | undefined;
  readonly #handedBy = new Set<number>();
  /**
   * Handed fewer than a majority, it waits no longer than this for the rest (then tries again,
   * doubling it each time): the masters' heads may differ, and a waiter that sat on a minority for
   * its whole retry sleep would keep the others from a majority.
   */
  #splitMs = 0;
  #splitTimer: NodeJS.Timeout | undefined;
  /**
   * Masters that refused its latest attempt: where it stands in line. The others granted (free for
   * it) or did not answer, and no release there names it, so it waits for no more reports than this.
   */
  refusedBy: number | undefined;

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
   * Sleep up to `ms`, resolving early with what woke it (at once if woken since the last sleep);
   * rejects with the reason of the first of `signals` to abort.
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
   * Count hand-offs of `value` from now on (undefined: none; issue 40): a master that handed this
   * waiter's ticket the key set to it, or whose rollback kept it for the ticket. Those of any other
   * value are forgotten.
   */
  expect(value: string | undefined, splitMs = 0): void {
    if (value !== this.#expected) {
      this.#handedBy.clear();
      clearTimeout(this.#splitTimer);
      this.#splitTimer = undefined;
    }
    this.#expected = value;
    this.#splitMs ||= splitMs;
  }

  /** How many masters handed it `value` (0 unless it is the expected one). */
  handedBy(value: string): number {
    return value === this.#expected ? this.#handedBy.size : 0;
  }

  /** @internal master `master` handed it the key set to `value`; true if that woke it (`needed` masters have). */
  handedOver(value: string, master: number, needed: number): boolean {
    if (value !== this.#expected) return false;
    this.#handedBy.add(master);
    if (this.#handedBy.size < needed) {
      this.#splitTimer ??= setTimeout(() => {
        this.#splitTimer = undefined;
        this.#splitMs *= 2;
        this.wake('turn');
      }, this.#splitMs);
      return false;
    }
    clearTimeout(this.#splitTimer);
    this.#splitTimer = undefined;
    this.wake('handed');
    return true;
  }

  /**
   * @internal master `master` reports that `released` (a lock's value or a ticket) left one of the keys.
   * It wakes once `needed` masters have (at the first report, the key would still be held elsewhere),
   * or every master that refused it, when fewer did.
   */
  report(released: string, master: number, needed: number, source: WakeSource): void {
    if (released === this.ownValue || released === this.ticket || released === this.#wokenFor) return;
    this.#reportedBy.add(master);
    if (this.#reportedBy.size < Math.min(needed, Math.max(1, this.refusedBy ?? needed))) return;
    this.#reportedBy.clear();
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
    this.expect(undefined);
    this.notifier.unregister(this);
  }
}

/**
 * The waiter of `queue` (of those `among` accepts) that began first: of this process' waiters, the
 * one the masters' lines would name next. Woken when a master names nobody (its queue of the key
 * holds marks or lapsed tickets only) and when subscriptions take (a release may have been missed).
 */
function oldest(queue: readonly Waiter[], among: (waiter: Waiter) => boolean = () => true): Waiter | undefined {
  let first: Waiter | undefined;
  for (const waiter of queue) if (among(waiter) && (!first || waiter.startedMs < first.startedMs)) first = waiter;
  return first;
}
const exclusive = (waiter: Waiter): boolean => !waiter.shared;

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

  /**
   * One subscribe function per master; `votes`: whether a master's vote counts now (the restart
   * guard's), and so its hand-offs.
   */
  constructor(
    private readonly subscribers: readonly Subscribe[],
    private readonly votes: (master: number) => boolean = () => true,
  ) {
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
   * `released` (a lock's value, or a ticket) left `key` on master `master`, where `head` is first in
   * line now: that waiter, or with nobody in line this process' oldest of the key, wakes once a majority said so.
   */
  released(key: string, released: string, head: string | undefined, master: number): void {
    if (head !== undefined) this.turn(head, released, master);
    else {
      const queue = this.#queues.get(key);
      if (!queue) return;
      // The queue there holds no live ticket, only marks (readers, permits) or lapsed tickets: its report
      // counts for the oldest exclusive waiter, whom a line would name next, adding up with the masters
      // that name it. (A key with no queue at all is not announced.) Readers: all of them wake.
      oldest(queue, exclusive)?.report(released, master, this.#needed, 'released');
      for (const waiter of queue) if (waiter.shared) waiter.report(released, master, this.#needed, 'released');
    }
  }

  /**
   * Master number `master` named `head` first in line after `released` left (a release's reply says
   * so too); a head handed the key ("<ticket>=<value>") counts that hand-off, and is named either way.
   */
  turn(head: string, released: string, master: number): void {
    const handOff = handOffOf(head);
    const waiter = this.#tickets.get(handOff ? handOff.ticket : head);
    if (!waiter || (handOff && this.votes(master) && waiter.handedOver(handOff.value, master, this.#needed))) return;
    waiter.report(released, master, this.#needed, 'turn');
  }

  /** Someone in this process waits. */
  get waiting(): boolean {
    return this.#tickets.size > 0;
  }

  unregister(waiter: Waiter): void {
    for (const key of waiter.keys) {
      const queue = this.#queues.get(key) ?? [];
      const index = queue.indexOf(waiter);
      if (index >= 0) queue.splice(index, 1);
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
