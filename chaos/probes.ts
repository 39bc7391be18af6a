/**
 * Faults that live inside a chaos worker, run when the runner's schedule says so (the runner picks
 * every parameter from its seed). Each aims at a way the library's belief about a lock could drift
 * from what the masters hold, for the safety oracle to see:
 * - burst: hundreds of concurrent acquires on distinct and shared names, released at once; the
 *   shared ones are locks, a read-write lock's read holds, and a semaphore's permits;
 * - stall-listener: an `acquired` listener that busy-waits, during a burst (a stall between one
 *   lock's reply and the next lock's caller);
 * - stall-loop: plain event-loop stalls;
 * - late-extend: an extend with a shorter ttl than the keys have left, sent while the runner has 3
 *   of 5 masters paused, so it fails and lands late, shortening the keys;
 * - nested: re-entered using() inside using(), one of them fire-and-forget, outliving its outer
 *   routine, while the outer is released or (with the runner pausing masters) lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallSettings, Lock, Redlock } from '../src/index.js';
import type { OracleWatch } from './oracle-watch.js';

/** A burst's shared read-write lock and semaphore (every worker's bursts use the same limit). */
const BURST_READ_WRITE = 'chaos:burst:rw';
const BURST_SEMAPHORE = 'chaos:burst:sem';
const BURST_PERMIT_LIMIT = 3;

export type ProbeRequest =
  | { probe: 'burst'; size: number; sharedEvery: number; resources?: string[] }
  | { probe: 'stall-listener'; stallMs: number; count: number; size: number }
  | { probe: 'stall-loop'; stallMs: number; gapsMs: number[] }
  | { probe: 'late-extend-prepare' }
  | { probe: 'late-extend-go'; shortTtlMs: number }
  | { probe: 'nested'; holdMs: number; loss: boolean };

/** What the worker answers (sent when the probe is under way or done, as the runner needs). */
export type ProbeReply = { ok: boolean; detail: string };

const busyWait = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

export class Probes {
  /** Busy-waits left for the next `acquired` events. */
  #stalls: { stallMs: number; count: number } | undefined;
  #extendLock: Lock | undefined;
  /** Work that outlives the request that started it (releases, fire-and-forget routines). */
  readonly #background = new Set<Promise<unknown>>();

  constructor(
    private readonly worker: number,
    private readonly redlock: Redlock,
    private readonly ttlMs: number,
    private readonly watch: OracleWatch,
  ) {
    // Registered after the oracle's listener: the stall is between the reply and the callers.
    redlock.on('acquired', () => {
      const stalls = this.#stalls;
      if (!stalls || stalls.count <= 0) return;
      stalls.count--;
      busyWait(stalls.stallMs);
    });
  }

  /** Run one probe; `reply` may be called before it ends (nested answers once the outer is held). */
  async run(request: ProbeRequest, reply: (answer: ProbeReply) => void): Promise<void> {
    switch (request.probe) {
      case 'burst':
        reply(await this.#burst(request.size, request.sharedEvery, request.resources));
        return;
      case 'stall-listener':
        this.#stalls = { stallMs: request.stallMs, count: request.count };
        reply(await this.#burst(request.size, 3));
        this.#stalls = undefined;
        return;
      case 'stall-loop':
        for (const gapMs of request.gapsMs) {
          await sleep(gapMs);
          busyWait(request.stallMs);
        }
        reply({ ok: true, detail: `${request.gapsMs.length} stalls of ${request.stallMs} ms` });
        return;
      case 'late-extend-prepare':
        this.#extendLock = await this.redlock.acquire(`chaos:extend:w${this.worker}`, this.ttlMs, { retryCount: 0 }).catch(() => undefined);
        reply({ ok: this.#extendLock !== undefined, detail: this.#extendLock ? 'held' : 'could not acquire' });
        return;
      case 'late-extend-go':
        reply(await this.#lateExtend(request.shortTtlMs));
        return;
      case 'nested':
        await this.#nested(request.holdMs, request.loss, reply);
        return;
    }
  }

  /** Wait for what the probes left running (before quit). */
  async settle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled(this.#background);
  }

  async #burst(size: number, sharedEvery: number, named?: readonly string[]): Promise<ProbeReply> {
    const once = { retryCount: 1 };
    const acquires = named
      ? named.map((resource) => this.redlock.acquire(resource, this.ttlMs, once))
      : Array.from({ length: size }, (_, i) => this.#burstAcquire(i, sharedEvery, once));
    const settled = await Promise.allSettled(acquires);
    const locks = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    await Promise.allSettled(locks.map((lock) => lock.release()));
    const of = (type: string): number => locks.filter((lock) => lock.lease.type === type).length;
    // Most refusals are the shared names'; when most acquires fail, say why the first did.
    const refusal = settled.find((result) => result.status === 'rejected');
    const why = refusal && locks.length < acquires.length / 2 ? `; the first refused: ${String(refusal.reason).slice(0, 240)}` : '';
    return { ok: true, detail: `${locks.length} of ${acquires.length} acquired${named ? '' : ` (${of('permit')} permits, ${of('read')} read holds)`}${why}` };
  }

  /**
   * A burst's acquire number `i`: every `sharedEvery`-th on a name every worker shares, in turn three
   * locks, two read holds of a read-write lock and a permit; the others on names of its own. (No
   * write holds: a refused writer waits in line, and the readers after it in the burst would be
   * refused too; the workers' read-write sections pit writers against readers.)
   */
  #burstAcquire(i: number, sharedEvery: number, settings: CallSettings): Promise<Lock> {
    if (i % sharedEvery !== 0) return this.redlock.acquire(`chaos:burst:w${this.worker}:${i}`, this.ttlMs, settings);
    const turn = (i / sharedEvery) % 6;
    if (turn < 3) return this.redlock.acquire(`chaos:burst:s${turn}`, this.ttlMs, settings);
    if (turn < 5) return this.redlock.readWrite(BURST_READ_WRITE).read.acquire(this.ttlMs, settings);
    return this.redlock.semaphore(BURST_SEMAPHORE, BURST_PERMIT_LIMIT).acquire(this.ttlMs, settings);
  }

  async #lateExtend(shortTtlMs: number): Promise<ProbeReply> {
    const lock = this.#extendLock;
    this.#extendLock = undefined;
    if (!lock) return { ok: false, detail: 'no lock' };
    const outcome = await lock.extend(shortTtlMs).then(
      () => 'extended',
      (error: unknown) => `failed (${error instanceof Error ? error.name : 'error'})`,
    );
    // Held until it expires, so the oracle keeps reading it while the late extends land.
    this.#later(sleep(Math.max(0, lock.expiration - Date.now()) + 50).then(() => lock.release()));
    return { ok: true, detail: outcome };
  }

  async #nested(holdMs: number, loss: boolean, reply: (answer: ProbeReply) => void): Promise<void> {
    const resource = 'chaos:nest';
    const nestedUsing = (work: () => Promise<void>, outer: Lock): Promise<void> =>
      this.redlock.using(resource, this.ttlMs, async (_signal, view) => {
        this.watch.viewStarted(view, outer);
        try {
          await work();
        } finally {
          this.watch.viewEnded(view);
        }
      });
    let answered = false;
    try {
      await this.redlock.using(resource, this.ttlMs, { retryCount: 5 }, async (signal, outer) => {
        await nestedUsing(() => sleep(20).then(() => undefined), outer);
        // Fire and forget: it outlives this routine, and the outer lock's release.
        this.#later(nestedUsing(() => sleep(holdMs).then(() => undefined), outer));
        answered = true;
        reply({ ok: true, detail: 'outer held' });
        if (loss) {
          const lost = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          await Promise.race([lost, sleep(3 * this.ttlMs)]);
          // A nested using after the loss: does it re-enter a lost lock?
          await nestedUsing(() => sleep(20).then(() => undefined), outer).catch(() => undefined);
        } else {
          await sleep(100);
        }
      });
    } catch (error) {
      if (!answered) reply({ ok: false, detail: `outer: ${error instanceof Error ? error.name : 'error'}` });
    }
  }

  #later(work: Promise<unknown>): void {
    const tracked = work.catch(() => undefined);
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }
}
