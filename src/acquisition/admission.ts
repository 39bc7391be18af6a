/**
 * How a lease is admitted: what an acquire asks the masters for and what its grant makes. The
 * exclusive hold (a lock, a write hold) is the acquire's own rule. A primitive (primitives/) brings
 * its own rule instead: its Lua operation (beside it, primitives/<name>.lua) and the few facts the
 * acquire loop needs about it (acquire.ts). Nothing else in acquisition/ knows a primitive.
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
  /**
   * A primitive's rule; absent: the exclusive acquire, which alone may take fencing tokens, waits
   * in the masters' lines with a ticket (as a fair permit does), and is re-entered by nested
   * exclusive or read calls.
   */
  readonly rule?: AdmissionRule;
}

/** A primitive's admission rule: how its script operation is sent and read, and how it holds. */
export interface AdmissionRule extends AdmitRule {
  /**
   * A shared hold (a read): a nested read in a `using()` routine that holds the keys re-enters it,
   * and its waiter wakes on every release of its keys (it keeps no place in line). Not shared: it
   * is never re-entered (a permit is always another permit).
   */
  readonly shared: boolean;
  /**
   * Its waiters stand in the masters' lines with their ticket, placed as an exclusive acquire's
   * (a fair semaphore's permits: the semaphore's line); otherwise they wait outside them.
   */
  readonly inLine?: boolean;
  /** A grouped rule's lease when `group` was granted (a permit: its slot). */
  leaseFor?(group: number): LeaseKind;
}
