/**
 * `using`: a lease held (and extended automatically) while a routine runs, released on every path.
 * The routine's async chain is a reentrancy scope: nested calls see what it holds.
 */
import { LockLostError } from '../errors.js';
import { describe } from '../config/describe.js';
import type { UsingSettings } from '../config/settings.js';
import type { FencedLock, Routine } from '../lease/lock.js';
import type { ReentrancyScope } from '../lease/reentrancy.js';
import type { Acquisitions } from './acquire.js';
import type { Admission } from './admission.js';

/** `routine` gets a FencedLock when the settings ask for fencing (the overloads' promise). */
export async function usingLease<T>(
  acquisitions: Acquisitions,
  scope: ReentrancyScope,
  admission: Admission,
  ttl: number,
  settings: UsingSettings | undefined,
  routine: Routine<T, FencedLock>,
): Promise<T> {
  const { onLost = 'resolve', ...callSettings } = settings ?? {};
  if (onLost !== 'resolve' && onLost !== 'reject') throw new TypeError(`onLost must be 'resolve' or 'reject', got ${describe(onLost)}`);
  const lock = await acquisitions.acquire(admission, ttl, { ...callSettings, autoExtend: true });
  try {
    const run = (): Promise<T> | T => routine(lock.signal, lock as FencedLock);
    // A rule that is never re-entered (a permit) holds nothing in the scope.
    const { rule } = admission;
    const result = await (rule && !rule.shared ? run() : scope.run(lock, run));
    const lost: unknown = lock.signal.reason;
    if (onLost === 'reject' && lost instanceof LockLostError) throw lost.withResult(result);
    return result;
  } finally {
    // A lost lock is released in the background: the outcome is known and should not wait.
    // It rejects only when this Redlock was quit meanwhile; the routine's outcome stands regardless.
    const release = lock.release().catch(() => undefined);
    if (!lock.signal.aborted) await release;
  }
}
