/**
 * Release: compare-and-delete on every master, resolved once a quorum deleted (or could not); the
 * rest are delivered in the background. The lock's ticket leaves the masters' lines with it.
 */
import { LockLostError } from '../errors.js';
import { resolveSettings } from '../config/settings.js';
import type { Lock, ReleaseResult } from '../lease/lock.js';
import type { LockOperation } from '../script/codec.js';
import { assertOpen, lose, type CallContext } from './context.js';

export async function releaseLock(context: CallContext, lock: Lock): Promise<ReleaseResult> {
  const { clock, stats, masters } = context;
  assertOpen(context);
  if (!lock.released && clock.epochMs() >= lock.expiration) {
    lose(context, lock, new LockLostError(lock.resources, 'its validity ended before it was released', []));
  }
  lock.markReleased();
  const startMs = clock.monotonicMs();
  const heldMs = startMs - lock.acquiredAtMs;
  if (lock.end()) stats.ended(heldMs);
  const effective = resolveSettings(context.settings, lock.callSettings, masters.count, lock.ttlMs);
  // Its ticket leaves the queues: it stayed first in line where it waited before its grant.
  const release: LockOperation = { kind: 'release', keys: lock.resources, value: lock.value, ticket: lock.ticket };
  const vote = await masters.fanOut(release, effective);
  stats.releases++;
  const result: ReleaseResult = { released: vote.reached, confirmedBy: vote.granted, heldBy: vote.granted, outcomes: vote.outcomes };
  const durationMs = clock.monotonicMs() - startMs;
  context.emit('released', () => ({ lock, resources: lock.resources, heldMs, durationMs, ...result }));
  return result;
}
