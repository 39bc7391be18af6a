/**
 * How a master's reply reads as its vote: the one place that turns the script's reply codes
 * (src/script/replies.ts, the contract) into granted / locked / queued / lost, or throws for a reply
 * that is no vote (an unreplicated grant, the script refusing the operation), which the fan-out
 * counts as that master's error (protocol/fan-out.ts).
 */
import { ReplicationError } from '../errors.js';
import { granted, type Answer } from './fan-out.js';
import type { LockOperation } from '../script/codec.js';
import { isDone, ReplyStatus, type OperationReply } from '../script/replies.js';

/** How a master's reply to `operation` reads as its vote (a throw is an `error` outcome). */
export function judgeOf(operation: LockOperation): (reply: OperationReply) => Answer {
  if (operation.kind === 'admit') return operation.rule.grouped ? judgeGrouped : judgeAcquire;
  if (operation.kind === 'release') return judgeRelease;
  if (operation.kind !== 'acquire') return judgeHeld;
  return operation.fenced ? judgeFencedAcquire : judgeAcquire;
}

/** A reply that is no vote whatever the operation: an unreplicated grant, an unusable fence counter, a read without TIME. */
function checkReply(reply: OperationReply): void {
  if (reply.unreplicated) {
    const { acknowledged, wanted, timeoutMs } = reply.unreplicated;
    throw new ReplicationError(acknowledged, wanted, timeoutMs);
  }
  if (reply.error !== undefined) {
    // The script's own refusal of this operation, in words: a fence counter it could not use (not
    // an integer, or INCR refused by an ACL), or a read without the master's clock (TIME refused).
    throw new Error(reply.error);
  }
}

const lost: Answer = Object.freeze({ status: 'lost' });
const released: Answer = Object.freeze({ status: 'released' });

// Each judge runs per master per call: checkReply only for a reply that carries something to check.
function judgeAcquire(reply: OperationReply): Answer {
  if (reply.unreplicated !== undefined || reply.error !== undefined) checkReply(reply);
  if (reply.status === ReplyStatus.GRANTED) return granted;
  return { status: reply.status === ReplyStatus.QUEUED ? 'queued' : 'locked', pttlMs: reply.detail };
}

/** A grouped rule's grant names its group (a permit: its slot): masters that gave different groups do not count together (fan-out.ts). */
function judgeGrouped(reply: OperationReply): Answer {
  if (reply.unreplicated !== undefined || reply.error !== undefined) checkReply(reply);
  if (reply.status === ReplyStatus.GRANTED) return { status: 'granted', slot: reply.detail };
  // A fair permit refused by the line alone: slots are free, each for a ticket ahead of it.
  return { status: reply.status === ReplyStatus.QUEUED ? 'queued' : 'locked', pttlMs: reply.detail };
}

function judgeFencedAcquire(reply: OperationReply): Answer {
  if (reply.unreplicated !== undefined || reply.error !== undefined) checkReply(reply);
  if (reply.status === ReplyStatus.GRANTED) return { status: 'granted', fence: reply.detail };
  return { status: reply.status === ReplyStatus.QUEUED ? 'queued' : 'locked', pttlMs: reply.detail };
}

/** Extend, fence: done on this master, or it did not hold the lock. */
function judgeHeld(reply: OperationReply): Answer {
  if (reply.unreplicated !== undefined || reply.error !== undefined) checkReply(reply);
  return isDone(reply) ? granted : lost;
}

/** Release: deleted on this master (a release grants nothing), or it did not hold the lock. */
function judgeRelease(reply: OperationReply): Answer {
  if (reply.unreplicated !== undefined || reply.error !== undefined) checkReply(reply);
  return isDone(reply) ? released : lost;
}
