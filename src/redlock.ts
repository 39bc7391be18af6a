/**
 * Redlock: the public calls, each handed to its layer (docs/architecture.md): acquisition/ for
 * acquire, extend, release and `using`; voters/ for the masters; primitives/; operator/.
 */
import { EventEmitter, setMaxListeners } from 'node:events';
import { LockLostError, RedlockClosedError } from './errors.js';
import { Acquisitions } from './acquisition/acquire.js';
import { assertOpen, lose, type CallContext } from './acquisition/context.js';
import { extendLock } from './acquisition/extend.js';
import { MasterClock } from './acquisition/master-clock.js';
import { Masters } from './acquisition/masters.js';
import { releaseLock } from './acquisition/release.js';
import { usingLease } from './acquisition/using.js';
import { Notifier } from './acquisition/waiting.js';
import type { NodeInput } from './clients/inputs.js';
import { defaultSettings, type CallSettings, type FencedSettings, type Optional, type Settings, type UsingSettings } from './config/settings.js';
import { normalizeResources, validateSettings } from './config/validation.js';
import { RenewalScheduler } from './lease/lifetime.js';
import { EXCLUSIVE, Lock, type FencedLock, type ReleaseResult, type Routine } from './lease/lock.js';
import { ReentrancyScope } from './lease/reentrancy.js';
import { channels, reportListenerError, type RedlockEvents } from './observability/events.js';
import { StatsRecorder, type RedlockStats } from './observability/stats.js';
import { operatorSettings, type OperatorCall } from './operator/every-master.js';
import { expectedFingerprints, forceReleaseOn, type ForceReleaseOptions, type ForceReleaseResult } from './operator/force-release.js';
import { inspectOn, type InspectOptions, type ResourceInspection } from './operator/inspect.js';
import { registerLeaseOwner, splitUsing } from './primitives/lease-type.js';
import { ReadWriteLock } from './primitives/read-write.js';
import { Semaphore, type SemaphoreOptions } from './primitives/semaphore.js';
import { systemClock } from './protocol/validity.js';
import { assembleVoters } from './voters/assemble.js';
import { clusterKeysProblem } from './voters/cluster/slots.js';
import type { HealthHooks, MasterHealth } from './voters/master/health.js';

export class Redlock extends EventEmitter<RedlockEvents> {
  readonly #masters: Masters;
  readonly #context: CallContext;
  readonly #acquisitions: Acquisitions;
  /** Aborted by quit(): wakes every acquire or extend sleeping between attempts (one listener each: no limit). */
  readonly #closing = new AbortController();

  /**
   * @param nodes node-redis clients you created (never closed by us; connected if they are not),
   *   and/or `redis://` / `rediss://` URLs or node-redis client options (we create, own and close those).
   */
  constructor(nodes: readonly NodeInput[], settings?: Optional<Settings>) {
    super();
    setMaxListeners(0, this.#closing.signal);
    if (!Array.isArray(nodes)) throw new TypeError('nodes must be an array of node-redis clients, URLs or client options');
    if (nodes.length === 0) throw new RangeError('nodes must name at least one redis master');
    const own: Optional<Settings> = { ...validateSettings(settings, nodes.length, false) };
    const hooks: HealthHooks = {
      onError: (error) => this.#emit('error', () => error),
      onDown: (event) => this.#emit('nodeDown', () => event),
      onUp: (event) => this.#emit('nodeUp', () => event),
      onClockJump: (event) => this.#emit('clockJump', () => event),
    };
    const replicasOf = (index: number): number => {
      const setting = own.replicas ?? 0;
      return typeof setting === 'number' ? setting : setting[index]!;
    };
    const { voters, clustered } = assembleVoters(nodes, { restartGuard: own.restartGuard, driftFactor: own.driftFactor ?? defaultSettings.driftFactor, replicasOf }, hooks);
    const clock = systemClock;
    const stats = new StatsRecorder(voters.map((voter) => voter.label));
    // With the restart guard, a master's hand-offs count only while its vote would (health()'s
    // `withheld`); without it, always (and no health snapshot per announcement).
    const notifier = new Notifier(
      voters.map((voter) => (listener) => voter.subscribeReleases(listener)),
      own.restartGuard ? (master) => voters[master]!.health().withheld === undefined : undefined,
    );
    this.#masters = new Masters(voters, own, notifier, stats, clock);
    this.#context = {
      masters: this.#masters,
      settings: own,
      clock,
      stats,
      notifier,
      masterClock: new MasterClock(() => clock.monotonicMs(), voters.length),
      renewals: new RenewalScheduler(),
      scope: new ReentrancyScope(() => clock.epochMs()),
      closing: this.#closing.signal,
      clustered,
      owner: this,
      emit: (event, payload) => this.#emit(event, payload),
    };
    this.#acquisitions = new Acquisitions(this.#context, (lock, ttl, onFailedAttempt) => extendLock(this.#context, lock, ttl, onFailedAttempt));
    registerLeaseOwner(this, {
      clustered,
      acquireLease: (admission, ttl, settings) => this.#acquisitions.acquire(admission, ttl, settings),
      usingLease: (admission, ttl, settings, routine) => usingLease(this.#acquisitions, this.#context.scope, admission, ttl, settings, routine),
    });
    for (const voter of voters) voter.start();
  }

  /** Acquire `resources` for `ttl` ms on a quorum of masters, retrying as the settings say. */
  acquire(resources: string | readonly string[], ttl: number, settings: FencedSettings): Promise<FencedLock>;
  acquire(resources: string | readonly string[], ttl: number, settings?: CallSettings): Promise<Lock>;
  acquire(resources: string | readonly string[], ttl: number, settings?: CallSettings): Promise<Lock> {
    return this.#acquisitions.acquire({ keys: normalizeResources(resources), lease: EXCLUSIVE }, ttl, settings);
  }

  /**
   * A counting semaphore named `name`: at most `limit` valid permits at any instant (every process
   * must use the same limit for a name). `semaphore(name, limit).acquire(ttl)` resolves to a permit:
   * a Lock with the lock's whole lifetime (extend, release, signal, autoExtend, `await using`).
   * Waiters race for each freed slot; with `{ fair: true }` they are served in the order they came, across processes.
   */
  semaphore(name: string, limit: number, options?: SemaphoreOptions): Semaphore {
    return new Semaphore(this, name, limit, options);
  }

  /**
   * A read-write lock named `name`: `.read` holds are shared, a `.write` hold is exclusive, and a
   * waiting writer stops new readers. The write hold is `acquire(name)` itself.
   */
  readWrite(name: string): ReadWriteLock {
    return new ReadWriteLock(this, name);
  }

  /**
   * Extend `lock` to `ttl` ms from now on a quorum of the masters that still hold it. Validity is
   * recomputed from this extend's own start. Retries failed attempts while the lock is valid.
   */
  async extend<L extends Lock>(lock: L, ttl: number): Promise<L> {
    if (lock instanceof Lock && lock.reentered) return lock.extend(ttl);
    await extendLock(this.#context, lock, ttl); // resolves to `lock` itself, its expiration moved
    return lock;
  }

  /**
   * Compare-and-delete on every master. Resolves once a quorum deleted (or could not), and keeps
   * delivering to the rest in the background. Releasing an expired lock resolves with `released: false`.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    if (!(lock instanceof Lock)) throw new TypeError('release needs a Lock returned by acquire');
    if (lock.reentered) return lock.release();
    // Releasing again answers with the first release's result: one release, one event.
    return lock.releaseOnce(() => releaseLock(this.#context, lock));
  }

  /** @internal a lock's lifetime reports its loss (once); also a release after validity ended. */
  reportLoss(lock: Lock, error: LockLostError): void {
    lose(this.#context, lock, error);
  }

  /** Counts and percentiles since this Redlock was created; see `RedlockStats`. */
  stats(): RedlockStats {
    return this.#context.stats.snapshot();
  }

  /**
   * Run `routine(signal, lock)` while holding `resources`, extending the lock automatically before its
   * validity falls below `automaticExtensionThreshold`; `signal` aborts with a `LockLostError` if the
   * lock is lost. Resolves to the routine's result (with `{ onLost: 'reject' }`, rejects with that
   * LockLostError if the lock was lost meanwhile) or rejects with its error. The lock is released on
   * every path, and a release problem never hides the routine's outcome.
   */
  using<T>(resources: string | readonly string[], ttl: number, routine: Routine<T>): Promise<T>;
  using<T>(resources: string | readonly string[], ttl: number, settings: UsingSettings & FencedSettings, routine: Routine<T, FencedLock>): Promise<T>;
  using<T>(resources: string | readonly string[], ttl: number, settings: UsingSettings, routine: Routine<T>): Promise<T>;
  async using<T>(
    resources: string | readonly string[],
    ttl: number,
    settingsOrRoutine: UsingSettings | Routine<T, FencedLock>,
    maybeRoutine?: Routine<T, FencedLock>,
  ): Promise<T> {
    const [settings, routine] = splitUsing(settingsOrRoutine, maybeRoutine, 'using(resources, ttl, [settings,] (signal, lock) => …)');
    const admission = { keys: normalizeResources(resources), lease: EXCLUSIVE };
    return usingLease(this.#acquisitions, this.#context.scope, admission, ttl, settings, routine);
  }

  /** Close the clients we created (yours stay open) and stop listening to yours. */
  async quit(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort(new RedlockClosedError());
    const { renewals, notifier } = this.#context;
    renewals.closed = true;
    for (const lifetime of renewals.scheduled) lifetime.abandon('the Redlock was quit, so it is no longer extended');
    await this.#acquisitions.drained();
    await notifier.close();
    await Promise.all(this.#masters.voters.map((voter) => voter.close()));
  }

  /**
   * Each master's health, in the order given: up / down / suspect (stalled), since when, the latest
   * failure with its cause and how many there were, and recent round trips. Transitions are also
   * the `nodeDown` and `nodeUp` events.
   */
  health(): MasterHealth[] {
    return this.#masters.voters.map((voter) => voter.health());
  }

  /**
   * What each master holds for each of `resources` now (holder, PTTL, fence counter, waiters), and
   * whether a quorum holds it and until when at the latest. Read-only; a master that gives no answer
   * within the per-master timeout is `unavailable`.
   */
  async inspect(resources: string | readonly string[], options?: InspectOptions): Promise<ResourceInspection[]> {
    const { keys, settings } = this.#operatorCall(resources, options);
    return inspectOn(this.#masters, keys, this.#context.settings.quorum, settings);
  }

  /**
   * For an operator clearing a stuck lock: delete each of `resources` on every master whatever
   * holds it (a lock's value, a permit, read holds) and announce the release, so waiters wake. The
   * fence counter and the wait queue stay. A holder still alive is not told: it goes on believing
   * it holds the lock while another acquires it, so mutual exclusion is broken until it notices
   * (an extend fails) — use it for holders known dead. With `expected` (this Redlock's `inspect()`
   * of them), each master deletes only the holders that inspection showed there.
   */
  async forceRelease(resources: string | readonly string[], options?: ForceReleaseOptions): Promise<ForceReleaseResult[]> {
    const { keys, settings } = this.#operatorCall(resources, options, ['expected']);
    const expected = options?.expected === undefined ? undefined : expectedFingerprints(options.expected, keys, this.#masters.labels);
    return forceReleaseOn(this.#masters, keys, settings, expected);
  }

  /** An inspection's or force release's arguments, checked before any network call (each resource is one operation). */
  #operatorCall(resources: string | readonly string[], options: InspectOptions | undefined, extra: readonly string[] = []): { keys: string[]; settings: OperatorCall } {
    const keys = normalizeResources(resources);
    if (this.#context.clustered) {
      for (const key of keys) {
        const problem = clusterKeysProblem([key]);
        if (problem) throw problem;
      }
    }
    const own = this.#context.settings;
    const settings = { ...operatorSettings(options, own.nodeTimeout, extra), batching: own.batching ?? true };
    assertOpen(this.#context);
    settings.signal?.throwIfAborted();
    return { keys, settings };
  }

  /** The masters, as `host:port`, in the order given. */
  get nodes(): readonly string[] {
    return this.#masters.labels;
  }

  /**
   * Emit an event and publish it on its diagnostics channel, building the payload only if someone
   * listens (an 'error' event with no listener would crash the process, so none is emitted then). A
   * listener's throw must change no call's outcome (a rejected acquire would leave its lock held by no
   * one) nor silence later listeners: it is reported as an uncaught exception on the next tick, as
   * Node reports a diagnostics_channel subscriber's (observability/events.ts).
   */
  #emit<E extends keyof RedlockEvents>(event: E, payload: () => RedlockEvents[E][0]): void {
    const channel = channels[event];
    // A copy: a `once` listener removes itself while called, and a listener may add or remove others.
    const listeners = this.rawListeners(event) as Array<(this: this, payload: RedlockEvents[E][0]) => unknown>;
    if (listeners.length === 0 && !channel.hasSubscribers) return;
    const built = payload();
    if (channel.hasSubscribers) channel.publish(built);
    for (const listener of listeners) {
      try {
        listener.call(this, built);
      } catch (error) {
        reportListenerError(error);
      }
    }
  }
}
