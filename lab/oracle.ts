/**
 * The safety oracle: compares what the library believes about a lock (`expiration`, `signal`,
 * `released`) with what the masters hold. Two checks (docs/safety-oracle.md, "What it checks"):
 * - validity: while a lock is valid in the library's eyes, its expiration must not pass the instant
 *   at which a quorum of masters is free of it (the q-th smallest expiry of its keys, per resource);
 * - exclusion: when a lock is acquired, no other holder of one of its resources may still be valid.
 * The judgements are pure functions (unit-tested without Redis); SafetyOracle tracks live locks,
 * reads the masters through a MasterReader and counts what it checked. Used by every integration
 * test (test/harness/oracle-setup.ts) and by the chaos workers.
 */
import type { LeaseKind } from '../src/lease/lock.js';
import type { KeyReader, MasterReading } from './master-reader.js';
export type { KeyReader } from './master-reader.js';

/** What the oracle needs of a lock; src/lease/lock.ts's Lock has all of it. */
export interface ObservedLock {
  readonly resources: readonly string[];
  readonly value: string;
  /** Epoch ms at which the library believes the lock's validity ends. */
  readonly expiration: number;
  readonly released: boolean;
  readonly signal: AbortSignal;
  /** The Redlock's masters as `host:port`, in order (a proxy's port where one stands in front). */
  readonly masters: readonly string[];
  readonly quorum: number;
  readonly reentered: boolean;
  readonly autoExtending: boolean;
  /** An exclusive lock (the default), a read hold (readers exclude only writers), or a semaphore's permit. */
  readonly lease?: LeaseKind;
}

/**
 * Valid in the library's eyes. A plain lock's signal aborts only when its expiration passes, and
 * reading `signal` gives the lock a lifetime with an expiry timer it would otherwise not have (which
 * changes how a late release is reported): only auto-extending locks' signals are read.
 */
const valid = (lock: ObservedLock, nowMs: number): boolean =>
  !lock.released && nowMs < lock.expiration && !(lock.autoExtending && lock.signal.aborted);

/** What one master says about one lock's keys, for the verdict. */
export type MasterView =
  | { readonly label: string; readonly state: 'read'; readonly reading: MasterReading }
  /** No answer in time (paused, blackholed, down): judged leniently, as if it held the keys forever. */
  | { readonly label: string; readonly state: 'unknown' }
  /**
   * Possibly restarted since the lock was acquired: it forgot the keys, which the algorithm's
   * assumptions exclude (the restart guard covers it). Judged leniently, like unknown.
   */
  | { readonly label: string; readonly state: 'restarted'; readonly reading: MasterReading };

/**
 * When `master` frees the lock's `resource`: PEXPIRETIME if it holds the lock's value (−1, no
 * expiry: never), −∞ if it holds another value or none; +∞ when it cannot be judged. A read hold is
 * freed at its deadline among the key's readers, or with the key if that comes first.
 */
export function keyExpiryMs(master: MasterView, resource: string, value: string): number {
  if (master.state !== 'read') return Number.POSITIVE_INFINITY;
  const key = master.reading.keys.get(resource);
  const keyExpiry = !key || key.expireTimeMs === -2 ? Number.NEGATIVE_INFINITY : key.expireTimeMs === -1 ? Number.POSITIVE_INFINITY : key.expireTimeMs;
  if (key?.readers) return Math.min(key.readers.get(value) ?? Number.NEGATIVE_INFINITY, keyExpiry);
  return key?.value === value ? keyExpiry : Number.NEGATIVE_INFINITY;
}

/** The instant at which `quorum` masters are free: the quorum-th smallest of their expiries. */
export function quorumBoundMs(expiriesMs: readonly number[], quorum: number): number {
  const sorted = [...expiriesMs].sort((a, b) => a - b);
  return sorted[quorum - 1] ?? Number.POSITIVE_INFINITY;
}

/** A lock's bound: the earliest of its resources' bounds (another client needs only one). */
export function lockBoundMs(lock: Pick<ObservedLock, 'resources' | 'value' | 'quorum'>, masters: readonly MasterView[]): number {
  return Math.min(...lock.resources.map((resource) => quorumBoundMs(masters.map((m) => keyExpiryMs(m, resource, lock.value)), lock.quorum)));
}

/** The library's belief about a lock at one instant. */
export interface Belief {
  readonly atMs: number;
  readonly valid: boolean;
  readonly expirationMs: number;
}

const beliefOf = (lock: ObservedLock, atMs = Date.now()): Belief => ({ atMs, valid: valid(lock, atMs), expirationMs: lock.expiration });

export interface CheckResult {
  /**
   * skipped: not judged (not valid in the library's eyes at both ends of the read, or the read
   * ended after the expiration); full: every master answered; partial: some could not be judged.
   */
  readonly verdict: 'skipped' | 'full' | 'partial';
  readonly violation?: string;
  readonly boundMs?: number;
}

/**
 * The validity invariant for one lock, from beliefs taken before and after reading the masters.
 * The lower of the two expirations counts: an extend in between may lower it, then raise it. Only a
 * read that ended before that expiration, of a lock valid at both ends, is judged: then a key found
 * missing or expiring early was gone while the lock was believed valid.
 */
export function judgeValidity(
  lock: Pick<ObservedLock, 'resources' | 'value' | 'quorum'>,
  before: Belief,
  after: Belief,
  masters: readonly MasterView[],
): CheckResult {
  const expirationMs = Math.min(before.expirationMs, after.expirationMs);
  if (!before.valid || !after.valid || after.atMs >= expirationMs) return { verdict: 'skipped' };
  const boundMs = lockBoundMs(lock, masters);
  const verdict = masters.every((m) => m.state === 'read') ? 'full' : 'partial';
  if (expirationMs <= boundMs) return { verdict, boundMs };
  return { verdict, boundMs, violation: describeValidityViolation(lock, expirationMs, boundMs, masters) };
}

/**
 * The exclusion check when `acquired` was granted at `nowMs`: every other holder of one of its
 * resources (a different value: a re-entered view shares its holder's) that is still valid. Holders
 * are only comparable on the same masters with quorums that must intersect.
 */
export function exclusionViolations(
  acquired: ObservedLock,
  others: Iterable<ObservedLock>,
  nowMs: number,
  resolve: (label: string) => string = (label) => label,
): string[] {
  const masters = new Set(acquired.masters.map(resolve));
  const violations: string[] = [];
  const permit = acquired.lease?.type === 'permit' ? acquired.lease : undefined;
  let permits = 1;
  for (const other of others) {
    if (other === acquired || other.value === acquired.value || !valid(other, nowMs)) continue;
    const sameMasters = other.masters.length === masters.size && other.masters.every((label) => masters.has(resolve(label)));
    if (!sameMasters || other.quorum + acquired.quorum <= masters.size) continue;
    // A semaphore's permits, counted whatever slot they hold.
    if (permit && other.lease?.type === 'permit' && other.lease.semaphore === permit.semaphore && ++permits > permit.limit) {
      violations.push(`${permits} valid permits of semaphore ${permit.semaphore} (limit ${permit.limit}) once ${prefix(acquired.value)} was acquired at ${iso(nowMs)}`);
    }
    // Readers share.
    if (acquired.lease?.type === 'read' && other.lease?.type === 'read') continue;
    const shared = acquired.resources.filter((resource) => other.resources.includes(resource));
    if (shared.length === 0) continue;
    violations.push(
      `two holders of ${shared.join(', ')}: lock ${prefix(acquired.value)} was acquired at ${iso(nowMs)} while lock ` +
        `${prefix(other.value)}${other.reentered ? ' (re-entered)' : ''} is still valid until ${iso(other.expiration)} ` +
        `(${other.expiration - nowMs} ms more)`,
    );
  }
  return violations;
}

function describeValidityViolation(
  lock: Pick<ObservedLock, 'resources' | 'value' | 'quorum'>,
  expirationMs: number,
  boundMs: number,
  masters: readonly MasterView[],
): string {
  const rows = masters.map((master) => {
    const cells = lock.resources.map((resource) => {
      if (master.state === 'unknown') return `${resource}: no answer`;
      const key = master.reading.keys.get(resource);
      const held = !key || key.value === null ? 'none' : key.value === lock.value ? 'this lock' : `other ${prefix(key.value)}`;
      const expiry = !key || key.expireTimeMs < 0 ? `pexpiretime ${key?.expireTimeMs ?? -2}` : `pexpiretime ${key.expireTimeMs} (${key.expireTimeMs - expirationMs} ms vs expiration)`;
      return `${resource}: ${held}, ${expiry}`;
    });
    return `    ${master.label}${master.state === 'restarted' ? ' (restarted since acquired, not judged)' : ''}: ${cells.join('; ')}`;
  });
  return (
    `lock ${prefix(lock.value)} on ${lock.resources.join(', ')} is believed valid until ${iso(expirationMs)}, ` +
    `but ${lock.quorum} of ${masters.length} masters ${Number.isFinite(boundMs) ? `free it at ${iso(boundMs)}` : 'do not hold it'}: ` +
    `expiration exceeds the bound by ${Number.isFinite(boundMs) ? `${expirationMs - boundMs} ms` : '∞'}\n${rows.join('\n')}`
  );
}

const prefix = (value: string): string => `${value.slice(0, 8)}…`;
const iso = (epochMs: number): string => `${new Date(epochMs).toISOString().slice(11, 23)} (${epochMs})`;

export interface OracleCounts {
  full: number;
  partial: number;
  skipped: number;
  exclusion: number;
  violations: number;
}

interface Tracked {
  /** Epoch ms before which none of the lock's keys were set: runs of masters started later forgot nothing of it. */
  readonly sinceMs: number;
  /** When a check of it last started (sweeps take the longest unchecked first). */
  checkedAtMs: number;
}

/**
 * Tracks the live locks it is shown, runs both checks and counts them. Checks asked for in the
 * same event-loop turn are read together, one atomic read per master. Violations go to `report`.
 */
export class SafetyOracle {
  readonly counts: OracleCounts = { full: 0, partial: 0, skipped: 0, exclusion: 0, violations: 0 };
  readonly #tracked = new Map<ObservedLock, Tracked>();
  /** Locks a test broke on purpose (`forget`): never tracked again, whatever event comes. */
  #ignored = new WeakSet<ObservedLock>();
  /** Locks already reported by the validity check: a broken lock stays broken on every sweep. */
  readonly #flagged = new WeakSet<ObservedLock>();
  readonly #pending = new Set<Promise<unknown>>();
  #queued = new Set<ObservedLock>();
  #flush: NodeJS.Immediate | undefined;

  constructor(
    private readonly reader: KeyReader,
    /** Told each violation, with the lock it is about (exclusion: the lock just acquired). */
    private readonly report: (violation: string, lock: ObservedLock) => void,
  ) {}

  /** Live tracked locks (pruned as they end). */
  get live(): ObservedLock[] {
    this.#prune();
    return [...this.#tracked.keys()];
  }

  /**
   * A lock was just acquired (`waitMs` after its acquire call): the exclusion check against every
   * tracked holder, then track it and check its validity soon. Synchronous, cheap, never throws.
   */
  acquired(lock: ObservedLock, waitMs = 0): void {
    const nowMs = Date.now();
    this.counts.exclusion++;
    for (const violation of exclusionViolations(lock, this.live, nowMs, (label) => this.reader.resolve(label))) this.#violation(violation, lock);
    this.track(lock, nowMs - waitMs - 1);
    this.soon(lock);
  }

  /**
   * `lock` was released; `deleted`: a quorum of masters deleted its keys. Any other lock of the same
   * holder (a re-entered view) still valid then is believed valid on keys that are gone.
   */
  released(lock: ObservedLock, deleted: boolean): void {
    const nowMs = Date.now();
    if (deleted) {
      for (const view of this.live) {
        if (view === lock || view.value !== lock.value) continue;
        this.#violation(
          `lock ${prefix(view.value)}${view.reentered ? ' (re-entered)' : ''} on ${view.resources.join(', ')} is still valid ` +
            `until ${iso(view.expiration)} (${view.expiration - nowMs} ms more) after its holder was released at ${iso(nowMs)}: ` +
            'a quorum of masters deleted its keys',
          view,
        );
        this.soon(view);
      }
    }
    this.#tracked.delete(lock);
  }

  /** Follow `lock` from now on (a lock first seen extended, or a re-entered view). */
  track(lock: ObservedLock, sinceMs?: number): void {
    if (this.#tracked.has(lock) || this.#ignored.has(lock)) return;
    this.#tracked.set(lock, { sinceMs: sinceMs ?? Date.now() - 60_000, checkedAtMs: 0 });
    for (const label of lock.masters) this.reader.warm?.(label);
  }

  /** Check `lock`'s validity in the next batch (an extend landed or failed); tracks it too. */
  soon(lock: ObservedLock): void {
    if (this.#ignored.has(lock)) return;
    this.track(lock);
    this.#queued.add(lock);
    this.#flush ??= setImmediate(() => {
      this.#flush = undefined;
      const batch = [...this.#queued];
      this.#queued = new Set();
      void this.#run(batch);
    });
  }

  /** Check these locks now (tracking them); resolves to one result per lock. */
  check(locks: readonly ObservedLock[]): Promise<CheckResult[]> {
    for (const lock of locks) this.track(lock);
    return this.#run(locks);
  }

  /**
   * Check the live tracked locks: all of them, or the `limit` checked longest ago (many held locks,
   * each also checked on its every extend, need not all be read on every sweep).
   */
  sweep(limit = Number.POSITIVE_INFINITY): Promise<CheckResult[]> {
    const live = this.live;
    if (live.length <= limit) return this.#run(live);
    const checkedAt = (lock: ObservedLock): number => this.#tracked.get(lock)?.checkedAtMs ?? 0;
    return this.#run(live.sort((a, b) => checkedAt(a) - checkedAt(b)).slice(0, limit));
  }

  /**
   * Sweep every `intervalMs` (at most `limit` locks each time; a sweep still running is not
   * overlapped) until the returned function is called. The timer never keeps the process alive.
   */
  sweepEvery(intervalMs = 150, limit = 50): () => void {
    let sweeping = false;
    const timer = setInterval(() => {
      if (sweeping) return;
      sweeping = true;
      void this.sweep(limit).finally(() => (sweeping = false));
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Resolves once every check started so far (and queued ones) finished. */
  async settle(): Promise<void> {
    while (this.#pending.size > 0 || this.#flush) {
      if (this.#flush) {
        clearImmediate(this.#flush);
        this.#flush = undefined;
        const batch = [...this.#queued];
        this.#queued = new Set();
        void this.#run(batch);
      }
      await Promise.all(this.#pending);
    }
  }

  /** Stop following every lock (between tests); checks in flight still count. */
  forgetAll(): void {
    this.#tracked.clear();
    this.#queued.clear();
    this.#ignored = new WeakSet();
  }

  /** Stop following one lock for good (a test that breaks its keys on purpose). */
  forget(lock: ObservedLock): void {
    this.#ignored.add(lock);
    this.#tracked.delete(lock);
    this.#queued.delete(lock);
  }

  #run(locks: readonly ObservedLock[]): Promise<CheckResult[]> {
    const run = this.#checkBatch(locks);
    this.#pending.add(run);
    void run.finally(() => this.#pending.delete(run));
    return run;
  }

  async #checkBatch(locks: readonly ObservedLock[]): Promise<CheckResult[]> {
    if (locks.length === 0) return [];
    const before = locks.map((lock) => beliefOf(lock));
    for (const lock of locks) {
      const tracked = this.#tracked.get(lock);
      if (tracked) tracked.checkedAtMs = before[0]!.atMs;
    }
    const keysByMaster = new Map<string, Set<string>>();
    for (const lock of locks) {
      for (const label of lock.masters) {
        const keys = keysByMaster.get(label) ?? new Set<string>();
        for (const resource of lock.resources) keys.add(resource);
        keysByMaster.set(label, keys);
      }
    }
    const readings = new Map(
      await Promise.all([...keysByMaster].map(async ([label, keys]) => [label, await this.reader.read(label, [...keys])] as const)),
    );
    const afterMs = Date.now();
    return locks.map((lock, index) => {
      const sinceMs = this.#tracked.get(lock)?.sinceMs ?? Date.now() - 60_000;
      const masters = lock.masters.map((label) => this.#view(label, readings.get(label), sinceMs));
      const result = judgeValidity(lock, before[index]!, beliefOf(lock, afterMs), masters);
      this.counts[result.verdict]++;
      if (result.violation && !this.#flagged.has(lock)) {
        this.#flagged.add(lock);
        this.#violation(result.violation, lock);
      }
      return result;
    });
  }

  #view(label: string, reading: MasterReading | undefined, sinceMs: number): MasterView {
    if (!reading) return { label, state: 'unknown' };
    // This run of the master surely existed when the lock's keys were set if we heard from it
    // before, or its uptime says so (INFO's whole seconds may overstate by up to one).
    // A master this process started says exactly when (a restart updates it).
    const startedAtMs = this.reader.startedAtMs?.(label);
    if (startedAtMs !== undefined) return startedAtMs <= sinceMs ? { label, state: 'read', reading } : { label, state: 'restarted', reading };
    const firstSeenMs = this.reader.firstSeenMs(label, reading.runId);
    const startedBeforeMs = reading.receivedAtMs - Math.max(0, reading.uptimeSeconds - 1) * 1000;
    const older = (firstSeenMs !== undefined && firstSeenMs <= sinceMs) || startedBeforeMs <= sinceMs;
    return older ? { label, state: 'read', reading } : { label, state: 'restarted', reading };
  }

  #violation(message: string, lock: ObservedLock): void {
    this.counts.violations++;
    this.report(message, lock);
  }

  #prune(): void {
    const nowMs = Date.now();
    for (const lock of this.#tracked.keys()) if (!valid(lock, nowMs)) this.#tracked.delete(lock);
  }
}
