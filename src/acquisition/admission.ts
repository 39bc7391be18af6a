/**
 * How a lease is admitted: what an acquire asks the masters for and what its grant makes. The
 * exclusive hold is the acquire's own rule; a primitive brings its own (its Lua, and the facts below).
 */
import type { LeaseKind } from '../lease/lock.js';
import type { AdmitRule } from '../script/codec.js';

export interface Admission {
  /** The keys the acquire operation names (a semaphore's permit: every slot). */
  readonly keys: readonly string[];
  /** What a granted attempt makes (a grouped rule's: `rule.leaseFor` the group granted). */
  readonly lease: LeaseKind;
  /** How errors name what was asked for, e.g. `a permit of semaphore "pool" (limit 4)` (a lock: its resources). */
  readonly description?: string;
  /** A primitive's rule; absent: the exclusive acquire, which alone takes fencing tokens, waits in line and is re-entered. */
  readonly rule?: AdmissionRule;
}

/** A primitive's admission rule: how its script operation is sent and read, and how it holds. */
export interface AdmissionRule extends AdmitRule {
  /**
   * A shared hold (a read): re-entered by a nested read, and its waiter wakes on every release of its
   * keys (it has no place in line). Not shared: never re-entered (a permit is always another permit).
   */
  readonly shared: boolean;
  /** Its waiters stand in the masters' lines as an exclusive acquire's do (a fair permit); otherwise they wait outside. */
  readonly inLine?: boolean;
  /** A grouped rule's lease when `group` was granted (a permit: its slot). */
  leaseFor?(group: number): LeaseKind;
}
