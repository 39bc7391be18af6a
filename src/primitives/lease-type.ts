/**
 * What every primitive is made of: a lease type (acquire, using) over one admission rule, and the
 * part of a Redlock it calls. A primitive (semaphore.ts, read-write.ts) is its admission rule
 * (acquisition/admission.ts) and its Lua operation beside it; acquire, waiting, extension and
 * release are the lock's own (acquisition/). Why each is safe: docs/safety.md, "Semaphores and
 * read-write locks". docs/development.md has the recipe for a new one.
 */
import type { Admission } from '../acquisition/admission.js';
import type { CallSettings, FencedSettings, UsingSettings } from '../config/settings.js';
import { describe } from '../config/describe.js';
import type { FencedLock, Lock, Routine } from '../lease/lock.js';

/** The part of a Redlock the primitives call. */
export interface LeaseOwner {
  /** Some voter is a Redis Cluster: a primitive's companion keys must share its name's slot. */
  readonly clustered: boolean;
  acquireLease(admission: Admission, ttl: number, settings?: CallSettings): Promise<Lock>;
  usingLease<T>(admission: Admission, ttl: number, settings: UsingSettings | undefined, routine: Routine<T, FencedLock>): Promise<T>;
}

const owners = new WeakMap<object, LeaseOwner>();

/** @internal a Redlock registers the part of itself its primitives call (redlock.ts). */
export function registerLeaseOwner(redlock: object, owner: LeaseOwner): void {
  owners.set(redlock, owner);
}

/** The lease owner of `redlock`: a primitive is made from the Redlock whose masters it uses. */
export function leaseOwnerOf(redlock: object): LeaseOwner {
  const owner = owners.get(redlock);
  if (!owner) throw new TypeError(`a primitive needs a Redlock, got ${describe(redlock)}`);
  return owner;
}

/** A read hold's or a permit's settings: a call's, without fencing (tokens order exclusive holders only). */
export type SharedLeaseSettings = Omit<CallSettings, 'fencing'>;

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
  /** @internal from a primitive's constructor */
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
