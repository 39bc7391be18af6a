/**
 * Tick-coalesced batching for one master: operations submitted in the same event-loop turn go out
 * as one script call, and its reply is split back to them. Each operation keeps its own
 * cancellation: cancelled before the flush it is dropped (and rejects); after it, the call is
 * withdrawn (if still unsent) only once every operation in it was cancelled, and otherwise the
 * answer still arrives and is recorded as late.
 */
import type { Cancellation } from '../../protocol/fan-out.js';
import type { LockOperation } from '../../script/codec.js';
import type { OperationReply } from '../../script/replies.js';

/** One batch on its way: its replies, as `pick` made them (rejected for the whole batch if the master failed it). */
export interface SentBatch<R = OperationReply[]> {
  readonly replies: Promise<R>;
  /** Withdraw the call if it is still unsent, where the client could otherwise send it late. */
  readonly withdraw?: () => void;
}

/** Send `operations` as one script call; `pick` shapes its replies (a lone operation's own, say) in the same reaction. */
export type SendBatch = <R>(operations: LockOperation[], pick: (replies: OperationReply[]) => R) => SentBatch<R>;

/** A lone operation's `pick`: its own reply. */
export const first = (replies: OperationReply[]): OperationReply => replies[0]!;
const all = (replies: OperationReply[]): OperationReply[] => replies;

interface Waiting {
  readonly operation: LockOperation;
  readonly cancellation: Cancellation;
  readonly resolve: (reply: OperationReply) => void;
  readonly reject: (error: unknown) => void;
}

/** Bound on operations per script call, so one call never keeps a master busy for long. */
export const MAX_BATCH_OPERATIONS = 500;

/**
 * Batchers with an open turn, closed together by one setImmediate per event-loop turn (not one
 * per master: a fan-out opens a turn on every master at once).
 */
let openTurns: Batcher[] = [];
let endOfTurns: NodeJS.Immediate | undefined;

export class Batcher {
  #queue: Waiting[] = [];
  /** Set while a turn is open: its first operation has left, the rest wait for this flush. */
  #turnOpen = false;

  constructor(private readonly send: SendBatch) {}

  /**
   * Whether an operation submitted now leaves alone, at once: nothing is queued ahead of it and, with
   * `coalesce`, no turn is open for it to join (it opens one: the turn's later operations leave
   * together at its end). MasterVoter.submit asks first, for the usual case: it then sends the
   * operation itself, one step shorter (this runs per master per operation).
   */
  takesAlone(coalesce: boolean): boolean {
    if (this.#queue.length > 0) return false;
    if (!coalesce) return true;
    if (this.#turnOpen) return false;
    // setImmediate runs after every I/O callback of this turn: replies that arrived together
    // all get to queue their next operation first. (node-redis writes on setImmediate too.)
    this.#turnOpen = true;
    openTurns.push(this);
    endOfTurns ??= setImmediate(Batcher.#endTurns);
    return true;
  }

  /** The end of an event-loop turn: every open turn closes, and those with operations queued send them. */
  static #endTurns(): void {
    endOfTurns = undefined;
    const open = openTurns;
    openTurns = [];
    for (const batcher of open) {
      // Most turns hold their first operation alone: nothing queued, nothing to send.
      if (batcher.#queue.length > 0) batcher.flush();
      else batcher.#turnOpen = false;
    }
  }

  /**
   * Send `operation` now if it takes alone (takesAlone), or queue it: with `coalesce` it leaves
   * with the turn's others at its end; without, now. Either way it leaves after anything already
   * queued, so the order of operations on the master is the order of calls.
   */
  submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean): Promise<OperationReply> {
    if (cancellation.aborted) return Promise.reject(cancellation.reason);
    if (this.takesAlone(coalesce)) {
      const sent = this.send([operation], first);
      // Once sent, a cancelled operation's call is withdrawn if still unsent; its answer, if any,
      // still arrives. (A cancel after the answer withdraws nothing: the command left long ago.)
      if (sent.withdraw) cancellation.onCancel(sent.withdraw);
      return sent.replies;
    }
    return new Promise<OperationReply>((resolve, reject) => {
      const waiting: Waiting = { operation, cancellation, resolve, reject };
      cancellation.onCancel(() => {
        const index = this.#queue.indexOf(waiting);
        if (index >= 0) this.#queue.splice(index, 1);
        reject(cancellation.reason);
      });
      this.#queue.push(waiting);
      if (!coalesce) this.flush();
    });
  }

  /** Send everything queued now, and close the turn. */
  flush(): void {
    this.#turnOpen = false;
    while (this.#queue.length > 0) this.#sendChunk(this.#queue.splice(0, MAX_BATCH_OPERATIONS));
  }

  #sendChunk(chunk: Waiting[]): void {
    const sent = this.send(chunk.map((waiting) => waiting.operation), all);
    let live = chunk.length;
    for (const waiting of chunk) {
      waiting.cancellation.onCancel(() => {
        if (--live === 0) sent.withdraw?.();
      });
    }
    const settle = (each: (waiting: Waiting, index: number) => void): void => {
      chunk.forEach((waiting, index) => {
        waiting.cancellation.onCancel(undefined);
        each(waiting, index);
      });
    };
    sent.replies.then(
      (replies) => settle((waiting, index) => waiting.resolve(replies[index]!)),
      (error: unknown) => settle((waiting) => waiting.reject(error)),
    );
  }
}
