/**
 * One master's health, as `redlock.health()` reports it and the `nodeDown` / `nodeUp` events
 * announce it: up (its connection takes commands and answers), down (no connection that takes
 * commands, or one that cannot vote), suspect (a call's per-master timeout passed with no answer, or
 * commands wait and nothing has answered for the stall time: paused or blackholed, on a connection
 * of yours that we do not reset). Also the
 * de-duplication of its `error` events: a failure that repeats (a master that stays down fails
 * every reconnect attempt the same way) is emitted once and counted after that; a different
 * failure, or the next one after the master was up again, is emitted. Pure: no I/O, clock injected.
 */
import type { NodeError } from '../../errors.js';

export type HealthState = 'up' | 'down' | 'suspect';

/** One master, in `redlock.health()`. */
export interface MasterHealth {
  /** `host:port`. */
  readonly node: string;
  readonly state: HealthState;
  /** When it entered this state (epoch ms); for `down` before its first connection, when the Redlock was made. */
  readonly since: number;
  /** The latest failure (its `cause` is the client's or the master's error), if any since it was last up. */
  readonly lastError?: NodeError;
  /** When the latest failure happened (epoch ms). */
  readonly lastErrorAt?: number;
  /** Failures since it was last up, the repeats that were not emitted as `error` events included. */
  readonly errors: number;
  /** Round trips of its latest answered commands (up to the last 64), ms; undefined before the first answer. */
  readonly latencyMs?: { readonly last: number; readonly p50: number; readonly max: number; readonly samples: number };
  /**
   * With `restartGuard`: present while the guard withholds this master's acquire and extend votes,
   * though its connection may be `up`. Absent when it votes (and while it is `down`).
   */
  readonly withheld?: WithheldVote;
  /** With `restartGuard.clockJumps`: the latest jump of its clock seen (a backward one is only reported here and as an event). */
  readonly clockJump?: ClockJumpSeen;
  /**
   * A Redis Cluster voter: each of its masters' own health (the voter is `up` when every master
   * that owns slots is, else the worst of theirs; masters' transitions are their own nodeDown / nodeUp).
   */
  readonly shards?: readonly MasterHealth[];
}

/** Why the restart guard withholds a master's vote, and for how long. */
export interface WithheldVote {
  /**
   * `grace`: it (re)started, or a server with another run id appeared at its address, less than
   * `graceMs` ago. `unchecked`: its `INFO` has not been read on this connection yet (not yet
   * answered, or failed: asked again with backoff). `clock-jump` (with `clockJumps`): its clock
   * jumped forward by at least `jumpMs` less than `graceMs` ago, so keys there expired early.
   */
  readonly reason: 'grace' | 'unchecked' | 'clock-jump';
  /** Ms until it votes (Infinity while `unchecked`). */
  readonly waitMs: number;
  /** `clock-jump`: at least how far the clock jumped beyond the drift allowance, ms. */
  readonly jumpMs?: number;
}

/** A jump of a master's clock against this process' monotonic clock, beyond the drift allowance. */
export interface ClockJumpSeen {
  /** forward: keys there expired early (its vote is withheld); backward: keys outlive their ttl there. */
  readonly direction: 'forward' | 'backward';
  /** At least this far beyond the drift allowance, ms. */
  readonly jumpMs: number;
  /** When it was seen (epoch ms): in the answer to a script call that read the master's TIME. */
  readonly atMs: number;
}

/** A master's clock jumped (`restartGuard.clockJumps`); `waitMs`: how long its vote is withheld (0 for a backward jump). */
export interface ClockJumpEvent extends ClockJumpSeen {
  readonly node: string;
  readonly waitMs: number;
}

/** A master stopped being up. */
export interface NodeDownEvent {
  readonly node: string;
  readonly state: 'down' | 'suspect';
  /** What took it down (a connection error, a stall, a master in cluster mode), if known. */
  readonly error?: NodeError;
  /** How long it had been up, ms. */
  readonly upMs: number;
}

/** A master is up again (or for the first time: its first connection is a transition too). */
export interface NodeUpEvent {
  readonly node: string;
  /** How long it was down or suspect, ms. */
  readonly downMs: number;
  /** Failures meanwhile, emitted or not. */
  readonly errors: number;
}

export interface HealthHooks {
  onDown(event: NodeDownEvent): void;
  onUp(event: NodeUpEvent): void;
  /** A failure to emit as an `error` event (the first of a run of identical ones). */
  onError(error: NodeError): void;
  /** A jump of its clock seen (restartGuard.clockJumps). */
  onClockJump(event: ClockJumpEvent): void;
}

const LATENCY_SAMPLES = 64;

export class NodeHealth {
  #state: HealthState = 'down';
  #since: number;
  #lastError: NodeError | undefined;
  #lastErrorAt: number | undefined;
  #errors = 0;
  /** What this outage's emitted failures looked like: a repeat of any is counted, not emitted. */
  readonly #signatures = new Set<string>();
  readonly #latencies = new Float64Array(LATENCY_SAMPLES);
  #latencyCount = 0;

  constructor(
    readonly node: string,
    private readonly hooks: Omit<HealthHooks, 'onClockJump'>,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.#since = nowMs();
  }

  get state(): HealthState {
    return this.#state;
  }

  /** Its connection takes commands (again), or a suspect one answered. */
  up(): void {
    if (this.#state === 'up') return;
    const now = this.nowMs();
    const event: NodeUpEvent = { node: this.node, downMs: now - this.#since, errors: this.#errors };
    this.#state = 'up';
    this.#since = now;
    this.#errors = 0;
    this.#lastError = undefined;
    this.#lastErrorAt = undefined;
    this.#signatures.clear();
    this.hooks.onUp(event);
  }

  /**
   * No connection that takes commands (or one that cannot vote); `error` is reported too. Without
   * one, the transition names the latest failure (ioredis reports a drop's error while still ready).
   */
  down(error?: NodeError): void {
    if (error) this.failed(error);
    this.#enter('down', error ?? this.#lastError);
  }

  /** Commands wait unanswered for the stall time; `error` says so and is reported too. */
  suspect(error: NodeError): void {
    this.failed(error);
    if (this.#state === 'up') this.#enter('suspect', error);
  }

  /**
   * A call's per-master timeout passed with no answer (paused, blackholed, or just slow): suspect
   * now, not only at the stall check's 2 s, and up again with its next answer. Counted, not emitted
   * as an `error` event: the call's own outcome says `timeout`, and a real stall is reported by the check.
   */
  unanswered(error: NodeError): void {
    if (this.#state !== 'up') return;
    this.#errors++;
    this.#lastError = error;
    this.#lastErrorAt = this.nowMs();
    this.#enter('suspect', error);
  }

  /**
   * A failure: counted, and emitted unless it repeats one already emitted since the master was
   * last up (a reconnect loop alternating two failures is two events, not a flood).
   */
  failed(error: NodeError): void {
    this.#errors++;
    this.#lastError = error;
    this.#lastErrorAt = this.nowMs();
    const signature = signatureOf(error);
    if (this.#signatures.has(signature)) return;
    this.#signatures.add(signature);
    this.hooks.onError(error);
  }

  /** A command was answered after `latencyMs`: a suspect master that answers is up. */
  answered(latencyMs: number): void {
    this.#latencies[this.#latencyCount++ % LATENCY_SAMPLES] = latencyMs;
    if (this.#state === 'suspect') this.up();
  }

  snapshot(): MasterHealth {
    const base = { node: this.node, state: this.#state, since: this.#since, errors: this.#errors };
    const errorPart = this.#lastError ? { lastError: this.#lastError, lastErrorAt: this.#lastErrorAt! } : {};
    if (this.#latencyCount === 0) return { ...base, ...errorPart };
    const samples = Math.min(this.#latencyCount, LATENCY_SAMPLES);
    const sorted = Array.from(this.#latencies.subarray(0, samples)).sort((a, b) => a - b);
    const last = this.#latencies[(this.#latencyCount - 1) % LATENCY_SAMPLES]!;
    const latencyMs = { last, p50: sorted[Math.floor((samples - 1) / 2)]!, max: sorted[samples - 1]!, samples };
    return { ...base, ...errorPart, latencyMs };
  }

  #enter(state: 'down' | 'suspect', error: NodeError | undefined): void {
    if (this.#state === state) return;
    const wasUp = this.#state === 'up';
    const now = this.nowMs();
    const upMs = wasUp ? now - this.#since : 0;
    this.#state = state;
    // Suspect, then down: still one outage, counted from when it stopped being up.
    if (wasUp) this.#since = now;
    if (wasUp) this.hooks.onDown(error ? { node: this.node, state, error, upMs } : { node: this.node, state, upMs });
  }
}

/** Two failures are the same when they differ only in numbers (ms waited, commands waiting, ports). */
function signatureOf(error: NodeError): string {
  return `${error.name}: ${error.message.replace(/\d+/g, '#')}`;
}
