/**
 * The masters as one: the one fan-out of every call (an operation sent to every voter at once,
 * protocol/fan-out.ts), each reply read as its vote (protocol/votes.ts), and an attempt's votes
 * turned into its record (validity from the attempt's start).
 */
import { attemptRecord } from '../protocol/attempt-record.js';
import type { AttemptFields, AttemptRecord, NodeStatus } from '../protocol/outcomes.js';
import type { EffectiveSettings, Optional, Settings } from '../config/settings.js';
import { fanOut, Cancellation, type Answer, type FanOutResult } from '../protocol/fan-out.js';
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

/** What a fan-out needs of a call's settings (an operator's call has no ttl, so no EffectiveSettings). */
export type FanOutSettings = Pick<EffectiveSettings, 'quorum' | 'nodeTimeoutMs' | 'batching'>;

/** How one fan-out waits and reads its replies, beyond the operation's own vote. */
export interface FanOutCall {
  readonly signal?: AbortSignal | undefined;
  /** Decide only once every master answered or timed out. */
  readonly waitForAll?: boolean;
  /** Each reply as it arrives (a clock reading, an operator's answer). */
  readonly onReply?: (index: number, reply: OperationReply) => void;
  /** Reads a reply as its answer, instead of the operation's vote (an operator's: any reply is an answer). */
  readonly judge?: (reply: OperationReply) => Answer;
}

export class Masters {
  /** Each master as `host:port`, in the order given. */
  readonly labels: readonly string[];
  readonly count: number;
  /** Each master as votesFor / votesAgainst name it (errors.ts, ExecutionStats). */
  readonly #identities: readonly unknown[];

  constructor(
    readonly voters: readonly Voter[],
    private readonly settings: Optional<Settings>,
    private readonly notifier: Notifier,
    private readonly stats: StatsRecorder,
    private readonly clock: Clock,
  ) {
    this.labels = voters.map((voter) => voter.label);
    this.count = voters.length;
    this.#identities = voters.map((voter) => voter.identity);
  }

  /** Counted; and a master that let a call's timeout pass unanswered is not up (health) until it answers. */
  readonly #onAnswer = (index: number, status: NodeStatus, latencyMs: number): void => {
    this.stats.answer(index, status);
    if (status === 'timeout') this.voters[index]!.unanswered?.(latencyMs);
  };


  startOfAttempt(): AttemptStart {
    return { monotonicMs: this.clock.monotonicMs(), epochMs: this.clock.epochMs() };
  }

  /** The keys matching `pattern` on each master: undefined where a voter cannot list them or did not answer. */
  keysMatching(pattern: string, timeoutMs: number, signal?: AbortSignal): Promise<(string[] | undefined)[]> {
    return Promise.all(this.voters.map(async (voter) => (voter.keysMatching ? voter.keysMatching(pattern, timeoutMs, signal).catch(() => undefined) : undefined)));
  }

  /** `operation` on master `index` alone (best-effort background work: a permit's spare slots). */
  submitTo(index: number, operation: LockOperation, effective: FanOutSettings): Promise<OperationReply> {
    return this.voters[index]!.submit(operation, new Cancellation(), effective.batching);
  }

  /**
   * `operation` (or, per master, `operation(index)`) on every master, each reply read as its vote;
   * resolves at quorum or once it is impossible (`waitForAll`: once every master answered).
   */
  fanOut(operation: LockOperation | ((index: number) => LockOperation), effective: FanOutSettings, call?: FanOutCall, to?: readonly number[]): Promise<FanOutResult> {
    let sent = operation;
    let onReply = call?.onReply;
    if (typeof operation !== 'function') {
      // With `replicas`, a grant's WAIT blocks at most a third of this call's per-master timeout
      // (voters/master/script-call.ts): Redis ends a WAIT on its clock tick, up to ~100 ms late (hz 10),
      // and the answer should still come before the master times out.
      if (this.settings.replicas) sent = { ...operation, replicationTimeoutMs: Math.max(1, Math.floor(effective.nodeTimeoutMs / 3)) };
      if (operation.kind === 'release' && this.notifier.waiting) {
        // A release's reply names who is first in line now: one of ours is woken without waiting for
        // the announcement on its subscription (which may still be connecting).
        const released = operation.ticket || operation.value; // as the script announces it
        const caller = onReply; // a caller's own hook is kept, not replaced
        onReply = (index, reply) => {
          caller?.(index, reply);
          if (reply.head !== undefined) this.notifier.turn(reply.head, released, index);
        };
      }
    }
    const judge = call?.judge ?? judgeOf(typeof operation === 'function' ? operation(0) : operation);
    const options = {
      quorum: effective.quorum,
      timeoutMs: effective.nodeTimeoutMs,
      coalesce: effective.batching,
      onAnswer: this.#onAnswer,
      signal: call?.signal,
      waitForAll: call?.waitForAll,
      onReply,
    };
    if (!to) return fanOut(this.labels, this.voters, sent, options, judge);
    // Some masters only (`to`, their numbers): each answer is still counted, and read, as that master's.
    const read = onReply;
    const some = {
      ...options,
      onAnswer: (index: number, status: NodeStatus, latencyMs: number) => this.#onAnswer(to[index]!, status, latencyMs),
      onReply: read && ((index: number, reply: OperationReply) => read(to[index]!, reply)),
    };
    const each = typeof sent === 'function' ? (index: number) => (sent)(to[index]!) : sent;
    return fanOut(to.map((index) => this.labels[index]!), to.map((index) => this.voters[index]!), each, some, judge);
  }

  /** Send an operation to every master (or those numbered in `to`) and wait until each answered or timed out. */
  async everywhere(operation: LockOperation, effective: FanOutSettings, to?: readonly number[]): Promise<void> {
    if (to?.length === 0) return;
    await this.fanOut(operation, effective, { waitForAll: true }, to);
  }

  /** An attempt of an acquire or extend, its votes in: its record, with the validity left from `start`. */
  attemptRecord(vote: FanOutResult, ttlMs: number, effective: EffectiveSettings, attempt: number, start: AttemptStart, keys: readonly string[]): AttemptRecord {
    const elapsedMs = this.clock.monotonicMs() - start.monotonicMs;
    const fields = {
      attempt,
      outcomes: vote.outcomes,
      elapsedMs,
      validityMs: validityMs(ttlMs, elapsedMs, effective.driftFactor),
      granted: vote.granted,
      slot: vote.slot,
    };
    return this.record(fields, effective, keys);
  }

  /** An attempt's record from its fields (the votes named by master). */
  record(fields: AttemptFields, effective: Pick<EffectiveSettings, 'quorum'>, keys: readonly string[]): AttemptRecord {
    return attemptRecord(fields, this.#identities, effective.quorum, keys);
  }
}
