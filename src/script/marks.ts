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
