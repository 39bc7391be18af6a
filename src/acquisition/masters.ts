/**
 * The masters as one: an operation sent to every voter at once (the one fan-out of every call,
 * protocol/fan-out.ts), each reply read as its vote (protocol/votes.ts), and an attempt's votes
 * turned into its record (validity from the attempt's start).
 */
import { attemptRecord } from '../protocol/attempt-record.js';
import type { AttemptFields, AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings, Settings } from '../config/settings.js';
import { fanOut, Cancellation, type FanOutOptions, type FanOutResult, type NodeOperation } from '../protocol/fan-out.js';
import { judgeOf } from '../protocol/votes.js';
import { validityMs, type Clock } from '../protocol/validity.js';
import type { LockOperation } from '../script/codec.js';
import type { OperationReply } from '../script/replies.js';
import type { StatsRecorder } from '../observability/stats.js';
import type { Voter } from '../voters/voter.js';
import type { Notifier } from './waiting.js';

/**
 * When an attempt began, read on both clocks at once before its first command left: elapsed time
 * is measured on the monotonic clock, the expiration is anchored on the epoch one (validity.ts).
 */
export interface AttemptStart {
  readonly monotonicMs: number;
  readonly epochMs: number;
}

/** One attempt's votes, and its record (validity, outcomes) for errors and events. */
export interface AttemptVote {
  readonly vote: FanOutResult;
  readonly record: AttemptRecord;
}

export class Masters {
  /** Each master as `host:port`, in the order given. */
  readonly labels: readonly string[];
  /** Each master as votesFor / votesAgainst name it (errors.ts, ExecutionStats). */
  readonly #identities: readonly unknown[];

  constructor(
    readonly voters: readonly Voter[],
    private readonly settings: Partial<Settings>,
    private readonly notifier: Notifier,
    private readonly stats: StatsRecorder,
    private readonly clock: Clock,
  ) {
    this.labels = voters.map((voter) => voter.label);
    this.#identities = voters.map((voter) => voter.identity);
  }

  get count(): number {
    return this.voters.length;
  }

  startOfAttempt(): AttemptStart {
    return { monotonicMs: this.clock.monotonicMs(), epochMs: this.clock.epochMs() };
  }

  /** `operation` on master `index` alone (best-effort background work: a permit's spare slots, a clock reading). */
  submitTo(index: number, operation: LockOperation, effective: EffectiveSettings): Promise<OperationReply> {
    return this.voters[index]!.submit(operation, new Cancellation(), effective.batching);
  }

  /** `operation` on every master, each reply read as its answer. */
  fanOut(operation: LockOperation, effective: EffectiveSettings, options?: Pick<FanOutOptions, 'signal' | 'waitForAll'>): Promise<FanOutResult> {
    // With `replicas`, a grant's WAIT blocks at most a third of this call's per-master timeout
    // (voters/master/script-call.ts): Redis ends a WAIT on its clock tick, up to ~100 ms late (hz 10), and the answer
    // should still come before the master times out.
    const sent = this.settings.replicas ? { ...operation, replicationTimeoutMs: Math.max(1, Math.floor(effective.nodeTimeoutMs / 3)) } : operation;
    let submit: NodeOperation<OperationReply> = (index, cancellation) => this.voters[index]!.submit(sent, cancellation, effective.batching);
    if (operation.kind === 'release' && this.notifier.waiting) {
      // A release's reply names who is first in line now: one of ours is woken without waiting for
      // the announcement on its subscription (which may still be connecting).
      const plain = submit;
      const released = operation.ticket || operation.value; // as the script announces it
      submit = (index, cancellation) =>
        plain(index, cancellation).then((reply) => {
          if (reply.head !== undefined) this.notifier.turn(reply.head, released, index);
          return reply;
        });
    }
    const settings = { quorum: effective.quorum, timeoutMs: effective.nodeTimeoutMs, onAnswer: this.stats.answer, ...options };
    return fanOut(this.labels, submit, settings, judgeOf(operation));
  }

  /** Send an operation to every master and wait until each answered or timed out. */
  async everywhere(operation: LockOperation, effective: EffectiveSettings): Promise<void> {
    await this.fanOut(operation, effective, { waitForAll: true });
  }

  /** One attempt of an acquire or extend: the votes, and its record with the validity left from `start`. */
  async attempt(operation: LockOperation, effective: EffectiveSettings, attempt: number, start: AttemptStart, signal?: AbortSignal): Promise<AttemptVote> {
    const vote = await this.fanOut(operation, effective, { signal });
    const elapsedMs = this.clock.monotonicMs() - start.monotonicMs;
    const fields = {
      attempt,
      outcomes: vote.outcomes,
      elapsedMs,
      validityMs: validityMs(operation.ttlMs, elapsedMs, effective.driftFactor),
      granted: vote.granted,
      slot: vote.slot,
    };
    return { vote, record: this.record(fields, effective, operation.keys) };
  }

  /** An attempt's record from its fields (the votes named by master). */
  record(fields: AttemptFields, effective: EffectiveSettings, keys: readonly string[]): AttemptRecord {
    return attemptRecord(fields, this.#identities, effective.quorum, keys);
  }
}
