/**
 * A master that is one shard of a cluster voter (cluster/cluster-voter.ts): how its operations are
 * routed and what the cluster voter tells it about its slots.
 */
import type { FenceKey, LockOperation } from '../../script/codec.js';

/**
 * How an operation goes to a master. `batch`: with the others of its turn (on a cluster master, a
 * batch of several slots carries its keys inline and answers ReplyStatus.NOT_SERVED_HERE for an
 * operation it does not serve: src/script/replies.ts). `alone`: with declared keys, so a cluster
 * master answers MOVED or ASK for it. `asking`: after ASKING, to the master importing its slot.
 */
export type Route = 'batch' | 'alone' | 'asking';

/** A MasterVoter that is one master of a cluster voter (cluster/cluster-voter.ts), reached on a connection of its own. */
export interface ShardRole {
  /** The hash slot of an operation's keys (one slot per operation: redlock.ts checks it). */
  readonly slotOf: (operation: LockOperation) => number;
  /** Where a resource's fence counter lives: in the resource's slot. */
  readonly fenceKey: FenceKey;
}
