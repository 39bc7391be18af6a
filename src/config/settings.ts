/**
 * The settings: what each one means, its default, and how a call's settings resolve against the
 * constructor's and the defaults (config/validation.ts checks the values a caller passes).
 */
import { driftMs } from '../protocol/validity.js';

export interface Settings {
  /** Clock drift allowance as a fraction of the ttl (validity loses ttl·driftFactor + 2 ms). Default 0.01. */
  driftFactor: number;
  /**
   * Retries after the first attempt; −1 retries until the call's `signal` aborts. Default 10. A retry
   * woken by a release costs none while the acquire has waited less than retryCount × (retryDelay +
   * retryJitter).
   */
  retryCount: number;
  /** Base wait between attempts, ms. Default 200. */
  retryDelay: number;
  /** Random ± added to each wait, ms, so contenders do not retry in lockstep. Default 100. */
  retryJitter: number;
  /**
   * Per master, per attempt: how long to wait for its answer before counting it as a "no", ms.
   * Default: 10 % of the ttl, at least 10 ms, at most 500 ms (and never above the ttl).
   */
  nodeTimeout: number | undefined;
  /** Masters that must agree. Default ⌊N/2⌋ + 1; must be > N/2 and ≤ N. */
  quorum: number | undefined;
  /**
   * A lock that extends itself (`using()`, `autoExtend`) extends before its validity falls below
   * this, ms. Default: a third of the validity a grant leaves (ttl − drift allowance), at most 500 ms
   * (or nodeTimeout + 50 ms, when that is more) — Redisson's watchdog renews at a third of its lease
   * too — so every ttl works with the default.
   */
  automaticExtensionThreshold: number | undefined;
  /**
   * Send the operations issued in one event-loop turn to each master as one script call. Same
   * semantics either way; off sends every operation as its own call. Default true.
   */
  batching: boolean;
  /**
   * Inside a `using()` routine, a nested `using()` / `acquire()` of resources the routine holds
   * re-enters: no network call, and its release frees nothing. Default true.
   */
  reentrant: boolean;
  /**
   * Opt-in, constructor only: a master whose uptime (INFO) is below `graceMs`, or whose run
   * id changed since we last saw it, gets no vote until the grace has passed. Use ≥ your largest
   * ttl. With `clockJumps: true`, also a master whose clock jumped forward (against this process'
   * monotonic clock, beyond the drift allowance) gets no vote for `graceMs` from when the jump was
   * seen: every script call then reads the master's TIME too. Default off.
   */
  restartGuard: { graceMs: number; clockJumps?: boolean | undefined } | undefined;
  /**
   * Opt-in, constructor only: a master's grant (acquire, extend, fencing) counts only once this many
   * of its replicas have it (`WAIT`, pipelined behind the script call, waiting at most a third of
   * the per-master timeout). Protects a lock from a failover inside a voter (a replica promoted without
   * the lock key), at the cost of the replication round trip on every grant. One number for every
   * master, or one per master in the order of `nodes` (0 for a master without replicas). Set it to
   * the number of replicas each master has. Default 0 (off).
   */
  replicas: number | readonly number[];
}

/**
 * Settings that only the constructor takes: they describe the masters, not one call (a call that
 * names one is refused at run time too).
 */
export type ConstructorOnlySetting = 'restartGuard' | 'replicas';

/**
 * Each field optional, and an explicit `undefined` is the same as leaving it out (as it reads at
 * run time): `{ signal: maybeSignal }` compiles for callers under exactOptionalPropertyTypes.
 */
export type Optional<T> = { [K in keyof T]?: T[K] | undefined };

/** Settings for one call: any setting but the constructor's own, plus a signal that cancels it. */
export interface CallSettings extends Optional<Omit<Settings, ConstructorOnlySetting>> {
  /** Cancels a pending acquire: it rejects with `signal.reason` and leaves nothing behind. */
  signal?: AbortSignal | undefined;
  /**
   * The lock extends itself before its validity falls below `automaticExtensionThreshold`, until
   * released; `lock.signal` aborts if it is lost. Acquire only.
   */
  autoExtend?: boolean | undefined;
  /**
   * Acquire only: also take a fencing token (`lock.fencingToken`), strictly larger than that of any
   * earlier fenced lock sharing a resource. Costs a second round trip. See the assumptions in docs/safety.md, "Fencing tokens".
   */
  fencing?: boolean | undefined;
}

/** A fenced acquire's settings: its lock is typed with a `fencingToken` (`FencedLock`). */
export interface FencedSettings extends CallSettings {
  fencing: true;
}

/** What `using()` does when the lock was lost while the routine ran (see `UsingSettings.onLost`). */
export type OnLost = 'resolve' | 'reject';

/** A `using()` call's settings: a call's, plus what to do when the lock is lost meanwhile. */
export interface UsingSettings extends CallSettings {
  /**
   * The lock was lost while the routine ran (its `signal` aborted), and the routine then returned.
   * `'resolve'` (default): resolve with its result — the routine ran to completion, was told of the
   * loss through `signal`, and is the one that knows whether its writes still stand. `'reject'`:
   * reject with the `LockLostError` (its `result` holds the routine's result), for callers that must
   * treat any section that lost exclusion as failed. A routine that throws rejects with its error
   * either way.
   */
  onLost?: OnLost | undefined;
}

/**
 * Room after an extend: an extend leaves at most ttl − drift allowance of validity, and the lock
 * must then sit above its threshold for a while — 100 ms, or a third of that validity for short
 * ttls — or it would be extending itself all the time.
 */
function extensionRoomMs(ttlMs: number, driftFactor: number): number {
  const grantMs = ttlMs - driftMs(ttlMs, driftFactor);
  return grantMs - Math.min(100, grantMs / 3);
}

/**
 * The default threshold: a third of what a grant leaves (always below the room), at most 500 ms —
 * or, with a per-master timeout above 450 ms (500 ms by default for ttls ≥ 5 s), that timeout and 50 ms more, so an extend that waits
 * out a slow master still lands before the validity ends.
 */
export function defaultExtensionThresholdMs(ttlMs: number, driftFactor: number, nodeTimeoutMs: number): number {
  return Math.min(Math.max(500, nodeTimeoutMs + 50), Math.floor((ttlMs - driftMs(ttlMs, driftFactor)) / 3));
}

/** Auto-extension needs room to work (`extensionRoomMs`): a threshold at or above it is refused. */
export function validateAutoExtension(ttlMs: number, effective: Pick<EffectiveSettings, 'automaticExtensionThresholdMs' | 'driftFactor'>): void {
  const thresholdMs = effective.automaticExtensionThresholdMs;
  const roomMs = extensionRoomMs(ttlMs, effective.driftFactor);
  if (thresholdMs >= roomMs) {
    throw new RangeError(
      `automaticExtensionThreshold ${thresholdMs} ms must be below ${Math.floor(roomMs)} ms for a lock with ttl ${ttlMs} ms that extends itself ` +
        '(the validity an extend leaves, less 100 ms or a third of it); leave it unset for a third of the validity',
    );
  }
}

export const defaultSettings: Readonly<Settings> = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  nodeTimeout: undefined,
  quorum: undefined,
  automaticExtensionThreshold: undefined,
  batching: true,
  reentrant: true,
  restartGuard: undefined,
  replicas: 0,
});

/** Settings resolved for one call on N masters with one ttl: every value a number. */
export interface EffectiveSettings {
  readonly driftFactor: number;
  readonly retryCount: number;
  readonly retryDelayMs: number;
  readonly retryJitterMs: number;
  readonly nodeTimeoutMs: number;
  readonly quorum: number;
  readonly automaticExtensionThresholdMs: number;
  readonly batching: boolean;
  readonly reentrant: boolean;
}

/** The default per-master timeout for a ttl; see `Settings.nodeTimeout` and docs/api.md ("Why that `nodeTimeout` default"). */
function defaultNodeTimeoutMs(ttlMs: number): number {
  return Math.min(ttlMs, 500, Math.max(10, Math.floor(ttlMs / 10)));
}

export function defaultQuorum(nodeCount: number): number {
  return Math.floor(nodeCount / 2) + 1;
}

/** Merge defaults ← constructor ← call, for a call with this ttl on N masters. */
export function resolveSettings(
  base: Optional<Settings>,
  call: Optional<Settings>,
  nodeCount: number,
  ttlMs: number,
): EffectiveSettings {
  // Each setting read once, written out: this runs for every acquire and release.
  const nodeTimeoutMs = call.nodeTimeout ?? base.nodeTimeout ?? defaultNodeTimeoutMs(ttlMs);
  if (nodeTimeoutMs > ttlMs) {
    throw new RangeError(
      `nodeTimeout ${nodeTimeoutMs} ms is above the ttl ${ttlMs} ms: a lock that waits that long for a master is already expired`,
    );
  }
  const driftFactor = call.driftFactor ?? base.driftFactor ?? defaultSettings.driftFactor;
  const effective: EffectiveSettings = {
    driftFactor,
    retryCount: call.retryCount ?? base.retryCount ?? defaultSettings.retryCount,
    retryDelayMs: call.retryDelay ?? base.retryDelay ?? defaultSettings.retryDelay,
    retryJitterMs: call.retryJitter ?? base.retryJitter ?? defaultSettings.retryJitter,
    nodeTimeoutMs,
    quorum: call.quorum ?? base.quorum ?? defaultQuorum(nodeCount),
    automaticExtensionThresholdMs:
      call.automaticExtensionThreshold ?? base.automaticExtensionThreshold ?? defaultExtensionThresholdMs(ttlMs, driftFactor, nodeTimeoutMs),
    batching: call.batching ?? base.batching ?? defaultSettings.batching,
    reentrant: call.reentrant ?? base.reentrant ?? defaultSettings.reentrant,
  };
  if (ttlMs <= driftMs(ttlMs, effective.driftFactor)) {
    throw new RangeError(
      `ttl ${ttlMs} ms leaves no validity after the drift allowance of ${driftMs(ttlMs, effective.driftFactor)} ms`,
    );
  }
  return effective;
}
