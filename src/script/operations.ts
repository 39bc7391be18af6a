/**
 * The operations the lock script runs, one type each: a discriminated union, so the compiler knows
 * each kind's fields. Their ARGV fields are declared once, in each operation's .lua header (FIELDS,
 * codec.ts); a field there is the property of the same name here.
 */

/**
 * acquire: an exclusive hold (a lock, a write hold); admit: a primitive's own admission rule (a
 * read hold, a semaphore's permit: its `rule` says which). inspect and force-release are an
 * operator's (operator/inspect.ts, operator/force-release.ts): a read-only snapshot of one
 * key, and a delete of one key whatever holds it. clock reads the master's TIME (acquisition/master-clock.ts), on the master
 * that serves its key.
 */
export type OperationKind = 'acquire' | 'admit' | 'extend' | 'release' | 'fence' | 'inspect' | 'force-release' | 'clock';

/**
 * A primitive's admission rule as the script runs it (primitives/: the rule in its .ts, the
 * operation in its .lua): the operation's code, a letter its file's `--! operation` header declares.
 */
export interface AdmitRule {
  readonly code: string;
  /**
   * Its grants name a group in their detail (a semaphore's slot): only grants of one group count
   * together (protocol/fan-out.ts, Tally), and a refused attempt's next one starts from the
   * highest group a master gave.
   */
  readonly grouped: boolean;
}

/** Whether an operation may write a grant (so `replicas` waits for it and the restart guard holds it back). */
export function grants(kind: OperationKind): boolean {
  return kind !== 'release' && kind !== 'inspect' && kind !== 'force-release' && kind !== 'clock';
}

/** What every operation has: its keys, its value, and (with `replicas`) how long the WAIT behind a grant may block (not sent to the script). */
interface OperationBase {
  readonly keys: readonly string[];
  /** The lock's value (inspect, force release, clock: the call's own, unique). */
  readonly value: string;
  readonly replicationTimeoutMs?: number;
}

/**
 * Where a waiter stands in line (an acquire, a permit). `ticket`: its place in each key's wait queue
 * (`newTicket`; '': it keeps no place, but still waits behind the queue; a reader's or racing
 * permit's: the mark a refusal leaves so releases are announced). `placeMs`: when the acquire began
 * on the masters' clock (their median, as this process reads it: master-clock.ts), the same on every
 * master; undefined before this process has read the masters' clocks: each master then places it at
 * its own TIME minus `ageMs` (ms since the acquire began, on the client's monotonic clock). Either
 * way no client's wall clock orders the line.
 */
interface InLine {
  readonly ticket: string;
  readonly ageMs: number;
  readonly placeMs: number | undefined;
}

/** An exclusive hold (a lock, a write hold); `fenced`: also increment each key's fence counter and answer the largest. */
export interface AcquireOperation extends OperationBase, InLine {
  readonly kind: 'acquire';
  readonly ttlMs: number;
  readonly fenced: boolean;
}
/** A primitive's own admission (a read hold, a permit): `rule` says which; `from`, for a grouped rule, the group each master tries first. */
export interface AdmitOperation extends OperationBase, InLine {
  readonly kind: 'admit';
  readonly rule: AdmitRule;
  readonly ttlMs: number;
  readonly from: number;
}
interface ExtendOperation extends OperationBase {
  readonly kind: 'extend';
  readonly ttlMs: number;
}
/**
 * Compare-and-delete; `ticket` (or a mark) leaves the queues too ('' for none). `keep`: the rollback
 * of a refused attempt of a lone key that may be handed to its waiter (issue 40, rollback.lua): the
 * ticket stays in line, and the key is kept for it where it is the attempt's and nobody is ahead of
 * the ticket; it carries the attempt's ttl, age and place.
 */
interface ReleaseOperation extends OperationBase {
  readonly kind: 'release';
  readonly ticket: string;
  readonly keep?: true;
  readonly ttlMs?: number;
  readonly ageMs?: number;
  readonly placeMs?: number | undefined;
}
/** Raise each key's fence counter to `token`. */
interface FenceOperation extends OperationBase {
  readonly kind: 'fence';
  readonly token: number;
}
/** An operator's read of one key (operator/inspect.ts). */
interface InspectOperation extends OperationBase {
  readonly kind: 'inspect';
}
/** An operator's delete of one key whatever holds it; with `expected` (a `KeySnapshot.fingerprint`), only if its holders are still those ('': any). */
interface ForceReleaseOperation extends OperationBase {
  readonly kind: 'force-release';
  readonly expected: string;
}
/** The master's TIME (acquisition/master-clock.ts); with a ticket and a place, the ticket takes that place in the keys' queues. */
interface ClockOperation extends OperationBase {
  readonly kind: 'clock';
  readonly ticket: string;
  readonly placeMs: number | undefined;
}

/** One lock's operation on one master. */
export type LockOperation =
  | AcquireOperation
  | AdmitOperation
  | ExtendOperation
  | ReleaseOperation
  | FenceOperation
  | InspectOperation
  | ForceReleaseOperation
  | ClockOperation;

