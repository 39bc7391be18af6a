/**
 * A counting semaphore: at most `limit` valid permits at any instant, across processes. A permit is
 * a Lock on one of `limit` slots; each slot is a Redlock mutex, so each has at most one valid holder.
 * Its admission rule is the script's `p` operation (semaphore.lua, beside this file): a free slot,
 * tried from the one each master is asked to start at: the first free slot, whoever asks (the
 * default); or, with `fair: true`, for a permit that fewer waiters are ahead of in the semaphore's
 * line than slots are free (the lock's line: one queue, its slot 0's, which every slot shares). Grants are grouped by slot: only masters that
 * gave the same slot count together (docs/safety.md, "Semaphores and read-write locks").
 */
import type { AdmissionRule } from '../acquisition/admission.js';
import { describe } from '../config/describe.js';
import { shownResource } from '../errors.js';
import { checkName } from '../config/validation.js';
import type { LeaseKind } from '../lease/lock.js';
import { PERMIT_INFIX } from '../script/marks.js';
import { clusterCompanionKey } from '../voters/cluster/slots.js';
import { LeaseType, leaseOwnerOf } from './lease-type.js';

declare module '../lease/lock.js' {
  interface LeaseKinds {
    permit: { readonly type: 'permit'; readonly semaphore: string; readonly limit: number; readonly slot: number };
  }
}

/** A semaphore's largest limit: a permit's acquire names every slot, on every master. */
const MAX_PERMITS = 1024;

/** Where a semaphore's slot number `slot` lives: beside its name (on a Redis Cluster voter, in its name's slot). */
export { PERMIT_INFIX };
function permitKey(semaphore: string, slot: number, clustered: boolean): string {
  return clustered ? clusterCompanionKey(semaphore, PERMIT_INFIX + slot) : semaphore + PERMIT_INFIX + slot;
}

/**
 * A permit's rule: a free slot from `from` (each master's own order, wrapping); the grant names its
 * slot. Fair: the permit stands in the semaphore's line, and takes a slot when fewer tickets are
 * ahead of it than slots are free. Racing: the first free slot, whoever asks.
 */
function permitRuleOf(fair: boolean): AdmissionRule {
  return { code: fair ? 'P' : 'p', grouped: true, shared: false, inLine: fair };
}
export const permitRule = permitRuleOf(true);
export const racingPermitRule = permitRuleOf(false);

/** How a semaphore admits its permits (`redlock.semaphore(name, limit, options)`). */
export interface SemaphoreOptions {
  /**
   * `true`: waiters are served in the order they came, across processes: a freed slot goes to the
   * head of the semaphore's line. `false` (the default): the racing semaphore, whoever asks first
   * after a release takes the slot. docs/api.md ("Semaphores and read-write locks") has the trade-off.
   */
  readonly fair?: boolean | undefined;
}

/** A semaphore's options: an object, `fair` a boolean. */
function validateOptions(options: unknown): boolean {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new TypeError(`semaphore options must be an object, got ${describe(options)}`);
  const { fair = false, ...rest } = options as { fair?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`unknown semaphore option ${unknown.map((key) => JSON.stringify(key)).join(', ')}: the one option is fair`);
  if (typeof fair !== 'boolean') throw new TypeError(`fair must be a boolean, got ${describe(fair)}`);
  return fair;
}

/** A semaphore's limit: an integer from 1 to MAX_PERMITS. */
function validateLimit(limit: unknown): number {
  if (typeof limit !== 'number') throw new TypeError(`limit must be a number, got ${describe(limit)}`);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be an integer ≥ 1, got ${limit}`);
  if (limit > MAX_PERMITS) throw new RangeError(`limit must be at most ${MAX_PERMITS} (a permit's acquire asks for every slot), got ${limit}`);
  return limit;
}

export class Semaphore extends LeaseType {
  readonly limit: number;
  /** Waiters are served in order (the semaphore's line), or race for each freed slot. */
  readonly fair: boolean;

  /**
   * The semaphore `name` on `redlock`'s masters (as `redlock.semaphore(name, limit, options)`); every
   * process must use the same limit for a name (and the same `fair`: a racing permit does not wait
   * in the line, so it may take a slot a fair waiter was owed).
   */
  constructor(redlock: object, readonly name: string, limit: number, options?: SemaphoreOptions) {
    checkName(name);
    const checked = validateLimit(limit);
    const fair = validateOptions(options);
    const owner = leaseOwnerOf(redlock);
    const keys = Array.from({ length: checked }, (_, slot) => permitKey(name, slot, owner.clustered));
    const lease: LeaseKind = { type: 'permit', semaphore: name, limit: checked, slot: -1 };
    const rule: AdmissionRule = { ...(fair ? permitRule : racingPermitRule), leaseFor: (slot) => ({ ...lease, slot }) };
    super(owner, { keys, lease, rule, description: `a permit of semaphore ${shownResource(name)} (limit ${checked})` });
    this.limit = checked;
    this.fair = fair;
  }
}
