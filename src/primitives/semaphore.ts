/**
 * A counting semaphore: at most `limit` valid permits at any instant, across processes. A permit is
 * a Lock on one of `limit` slots; each slot is a Redlock mutex, so each has at most one valid holder.
 * Its admission rule is the script's `p` operation (semaphore.lua, beside this file): the first free
 * slot, tried from the one each master is asked to start at. Grants are grouped by slot: only
 * masters that gave the same slot count together (docs/safety.md, "Semaphores and read-write locks").
 */
import type { AdmissionRule } from '../acquisition/admission.js';
import { describe } from '../config/describe.js';
import { shownResource } from '../errors.js';
import { checkName } from '../config/validation.js';
import type { LeaseKind } from '../lease/lock.js';
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
export const PERMIT_INFIX = ':redlock-permit:';
function permitKey(semaphore: string, slot: number, clustered: boolean): string {
  return clustered ? clusterCompanionKey(semaphore, PERMIT_INFIX + slot) : semaphore + PERMIT_INFIX + slot;
}

/** A permit's rule: the first free slot from `from` (each master's own order, wrapping); the grant names its slot. */
export const permitRule: AdmissionRule = { code: 'p', grouped: true, shared: false, fields: (from) => [String(from)] };

/** A semaphore's limit: an integer from 1 to MAX_PERMITS. */
function validateLimit(limit: unknown): number {
  if (typeof limit !== 'number') throw new TypeError(`limit must be a number, got ${describe(limit)}`);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be an integer ≥ 1, got ${limit}`);
  if (limit > MAX_PERMITS) throw new RangeError(`limit must be at most ${MAX_PERMITS} (a permit's acquire asks for every slot), got ${limit}`);
  return limit;
}

export class Semaphore extends LeaseType {
  readonly limit: number;

  /**
   * The semaphore `name` on `redlock`'s masters (as `redlock.semaphore(name, limit)`); every process
   * must use the same limit for a name.
   */
  constructor(
    redlock: object,
    readonly name: string,
    limit: number,
  ) {
    checkName(name);
    const checked = validateLimit(limit);
    const owner = leaseOwnerOf(redlock);
    const keys = Array.from({ length: checked }, (_, slot) => permitKey(name, slot, owner.clustered));
    const lease: LeaseKind = { type: 'permit', semaphore: name, limit: checked, slot: -1 };
    const rule: AdmissionRule = { ...permitRule, leaseFor: (slot) => ({ ...lease, slot }) };
    super(owner, { keys, lease, rule, description: `a permit of semaphore ${shownResource(name)} (limit ${checked})` });
    this.limit = checked;
  }
}
