/**
 * Beyond the mutex: a semaphore and a read-write lock over the same masters. Each is a lease like
 * the lock — acquired on a quorum, extended, released, lost — and adds only its admission rule (the
 * script's `permit` and `read` operations); acquire, waiting, extension and release are the lock's
 * own (redlock.ts). Why each is safe: docs/safety.md, "Semaphores and read-write locks".
 */
import { clusterCompanionKey } from '../voters/cluster/slots.js';
import type { FencedLock, Lock, LeaseKind, Routine } from '../lease/lock.js';
import type { OperationKind } from '../script/codec.js';
import { describe, type CallSettings, type FencedSettings, type UsingSettings } from '../config/settings.js';

/** How a lease is admitted: the acquire operation, the keys it is sent, and what it makes. */
export interface Admission {
  readonly kind: Extract<OperationKind, 'acquire' | 'read' | 'permit'>;
  /** The keys the acquire operation names (a permit: every slot of its semaphore). */
  readonly keys: readonly string[];
  /** What a granted attempt makes (a permit's slot is filled in from the vote). */
  readonly lease: LeaseKind;
  /** How errors name what was asked for, e.g. `a permit of semaphore "pool" (limit 4)` (a lock: its resources). */
  readonly description?: string;
}

/** The part of Redlock the primitives call. */
export interface LeaseOwner {
  acquireLease(admission: Admission, ttl: number, settings?: CallSettings): Promise<Lock>;
  usingLease<T>(admission: Admission, ttl: number, settings: UsingSettings | undefined, routine: Routine<T, FencedLock>): Promise<T>;
}

/** A read hold's or a permit's settings: a call's, without fencing (tokens order exclusive holders only). */
export type SharedLeaseSettings = Omit<CallSettings, 'fencing'>;

/** Where a semaphore's slot number `slot` lives: beside its name (on a Redis Cluster voter, in its name's slot). */
export const PERMIT_INFIX = ':redlock-permit:';
function permitKey(semaphore: string, slot: number, clustered: boolean): string {
  return clustered ? clusterCompanionKey(semaphore, PERMIT_INFIX + slot) : semaphore + PERMIT_INFIX + slot;
}

/** A `using` call's optional settings and its routine (`shape` names the call in the TypeError). */
export function splitUsing<T, S extends object, L extends Lock>(
  settingsOrRoutine: S | Routine<T, L>,
  maybeRoutine: Routine<T, L> | undefined,
  shape = 'using(ttl, [settings,] (signal, lock) => …)',
): [S | undefined, Routine<T, L>] {
  const [settings, routine] = typeof settingsOrRoutine === 'function' ? [undefined, settingsOrRoutine] : [settingsOrRoutine, maybeRoutine];
  if (typeof routine !== 'function') throw new TypeError(`using needs a routine: ${shape}`);
  // As acquire's settings are checked (validateSettings): null or a string would otherwise pass as no settings, or as odd ones.
  if (settings !== undefined && (typeof settings !== 'object' || settings === null || Array.isArray(settings))) {
    throw new TypeError(`settings must be an object, got ${describe(settings)}`);
  }
  return [settings, routine];
}

/**
 * A lease of one kind on one name: `acquire(ttl)` for a Lock you release yourself, `using(ttl, routine)`
 * for one held (and extended) while the routine runs.
 */
export class LeaseType {
  /** @internal from Redlock.semaphore / Redlock.readWrite */
  constructor(
    protected readonly owner: LeaseOwner,
    protected readonly admission: Admission,
  ) {}

  /** Acquire for `ttl` ms on a quorum of masters, retrying (and waiting for releases) as the settings say. */
  acquire(ttl: number, settings?: SharedLeaseSettings): Promise<Lock> {
    return this.owner.acquireLease(this.admission, ttl, settings);
  }

  /** Run `routine(signal, lock)` while holding it, extended automatically; released on every path (like `Redlock.using`). */
  using<T>(ttl: number, routine: Routine<T>): Promise<T>;
  using<T>(ttl: number, settings: Omit<UsingSettings, 'fencing'>, routine: Routine<T>): Promise<T>;
  using<T>(ttl: number, settingsOrRoutine: UsingSettings | Routine<T, FencedLock>, maybeRoutine?: Routine<T, FencedLock>): Promise<T> {
    const [settings, routine] = splitUsing(settingsOrRoutine, maybeRoutine);
    return this.owner.usingLease(this.admission, ttl, settings, routine);
  }
}

/** A read-write lock's write hold: exclusive, so it may take a fencing token like a lock. */
export class WriteLease extends LeaseType {
  /** Acquire for `ttl` ms; with `{ fencing: true }` the hold carries a fencing token. */
  override acquire(ttl: number, settings: FencedSettings): Promise<FencedLock>;
  override acquire(ttl: number, settings?: CallSettings): Promise<Lock>;
  override acquire(ttl: number, settings?: CallSettings): Promise<Lock> {
    return super.acquire(ttl, settings);
  }

  /** Run `routine(signal, lock)` while holding it (like `Redlock.using`); with `{ fencing: true }` the lock carries a token. */
  override using<T>(ttl: number, routine: Routine<T>): Promise<T>;
  override using<T>(ttl: number, settings: UsingSettings & FencedSettings, routine: Routine<T, FencedLock>): Promise<T>;
  override using<T>(ttl: number, settings: UsingSettings, routine: Routine<T>): Promise<T>;
  override using<T>(ttl: number, settingsOrRoutine: UsingSettings | Routine<T, FencedLock>, maybeRoutine?: Routine<T, FencedLock>): Promise<T> {
    const [settings, routine] = splitUsing(settingsOrRoutine, maybeRoutine);
    return this.owner.usingLease(this.admission, ttl, settings, routine);
  }
}

/**
 * A counting semaphore: at most `limit` valid permits at any instant, across processes. A permit is
 * a Lock on one of `limit` slots; each slot is a Redlock mutex, so each has at most one valid holder.
 */
export class Semaphore extends LeaseType {
  /** @internal from Redlock.semaphore */
  constructor(
    owner: LeaseOwner,
    readonly name: string,
    readonly limit: number,
    clustered: boolean,
  ) {
    const keys = Array.from({ length: limit }, (_, slot) => permitKey(name, slot, clustered));
    const lease: LeaseKind = { type: 'permit', semaphore: name, limit, slot: -1 };
    super(owner, { kind: 'permit', keys, lease, description: `a permit of semaphore ${JSON.stringify(name)} (limit ${limit})` });
  }
}

/**
 * A read-write lock: `read` holds are shared, a `write` hold is exclusive (never valid together with
 * any other holder), and a waiting writer stops new readers. A write hold is the plain lock on the
 * same name: `redlock.acquire(name)` and `write` exclude each other, and both exclude readers.
 */
export class ReadWriteLock {
  /** Shared holds: many readers at once, none while a writer holds or waits. */
  readonly read: LeaseType;
  /** The exclusive hold: `redlock.acquire(name)`, under another name. */
  readonly write: WriteLease;

  /** @internal from Redlock.readWrite */
  constructor(
    owner: LeaseOwner,
    readonly name: string,
  ) {
    const keys = [name];
    this.read = new LeaseType(owner, { kind: 'read', keys, lease: { type: 'read' }, description: `a read hold on ${JSON.stringify(name)}` });
    this.write = new WriteLease(owner, { kind: 'acquire', keys, lease: { type: 'lock' }, description: `a write hold on ${JSON.stringify(name)}` });
  }
}
