/**
 * A read-write lock: `read` holds are shared, a `write` hold is exclusive (never valid together with
 * any other holder), and a waiting writer stops new readers. A write hold is the plain lock on the
 * same name: `redlock.acquire(name)` and `write` exclude each other, and both exclude readers. A
 * read's admission rule is the script's `s` operation (read-write.lua, beside this file).
 */
import type { AdmissionRule } from '../acquisition/admission.js';
import { shownResource } from '../errors.js';
import { checkName } from '../config/validation.js';
import { EXCLUSIVE } from '../lease/lock.js';
import { LeaseType, WriteLease, leaseOwnerOf } from './lease-type.js';

declare module '../lease/lock.js' {
  interface LeaseKinds {
    read: { readonly type: 'read' };
  }
}

/** A read: shared with other readers, refused by a writer that holds or waits. */
export const readRule: AdmissionRule = { code: 's', grouped: false, shared: true };

export class ReadWriteLock {
  /** Shared holds: many readers at once, none while a writer holds or waits. */
  readonly read: LeaseType;
  /** The exclusive hold: `redlock.acquire(name)`, under another name. */
  readonly write: WriteLease;

  /** The read-write lock `name` on `redlock`'s masters (as `redlock.readWrite(name)`). */
  constructor(
    redlock: object,
    readonly name: string,
  ) {
    checkName(name);
    const owner = leaseOwnerOf(redlock);
    const keys = [name];
    this.read = new LeaseType(owner, { keys, lease: { type: 'read' }, rule: readRule, description: `a read hold on ${shownResource(name)}` });
    this.write = new WriteLease(owner, { keys, lease: EXCLUSIVE, description: `a write hold on ${shownResource(name)}` });
  }
}
