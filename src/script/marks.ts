/**
 * The constants the script is assembled with (scripts/assemble-lua.ts fills in `@NAME@`), kept apart
 * from the codec so the assembler can read them without the script it makes.
 */

/**
 * The member that marks a sorted set as read holds of ours (scored 0, below every deadline): a
 * sorted set without it is someone else's, and no operation reads or writes it as read holds.
 * Not a lock value (those are hex), so never a reader's.
 */
export const READ_HOLDS_MARK = 'redlock-quorum:read-holds';

/**
 * Where a standalone master announces released keys; a message is `<who left>:<first ticket in line,
 * or ''>:<key>` (codec.ts, parseReleased). The lean scripts have it assembled in; the batch script
 * takes the announcement as arguments (a cluster shard announces on a channel of its own).
 */
export const RELEASED_CHANNEL = 'redlock-quorum:released';

/**
 * Where a resource's wait queue lives on each master: next to the resource, so ACL key patterns that
 * allow the resource allow it (on a cluster voter, in the resource's slot: voters/cluster/slots.ts).
 */
export const QUEUE_SUFFIX = ':redlock-queue';

/** A semaphore's slot keys are its name, this, and the slot's number (primitives/semaphore.ts). */
export const PERMIT_INFIX = ':redlock-permit:';

/**
 * The key of `key`'s wait queue, as the scripts name it (line.lua queue_of, on a standalone master):
 * a semaphore's slots share one line, its slot 0's queue (issue 40: a refused permit joins one
 * queue, and any slot's release announces its head).
 */
export function queueKey(key: string): string {
  return lineKey(key) + QUEUE_SUFFIX;
}

/** The key whose queue `key` waits in: itself, or for a semaphore's slot, its slot 0. */
function lineKey(key: string): string {
  const at = key.lastIndexOf(PERMIT_INFIX);
  return at >= 0 && /^\d+$/.test(key.slice(at + PERMIT_INFIX.length)) ? key.slice(0, at + PERMIT_INFIX.length) + '0' : key;
}
