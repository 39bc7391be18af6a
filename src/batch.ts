/**
 * Tick-coalesced batching for one master: operations submitted in the same event-loop turn go out
 * as one script call, and its reply is split back to them. Each operation keeps its own signal:
 * aborted before the flush it is dropped (and rejects); after it, the call is withdrawn (if still
 * unsent) only once every operation in it was aborted.
 */
import type { LockOperation, OperationReply } from './scripts/index.js';

/**
 * Sends one batch. Aborting `withdraw` withdraws the call if it is still unsent (the sender may
 * abort it too, e.g. when the connection drops). Rejects for the whole batch (the master failed it).
 */
export type SendBatch = (operations: LockOperation[], withdraw: AbortController) => Promise<OperationReply[]>;

interface Waiting {
  readonly operation: LockOperation;
  readonly signal: AbortSignal;
  readonly resolve: (reply: OperationReply) => void;
  readonly reject: (error: unknown) => void;
  onAbort: () => void;
}

/** Bound on operations per script call, so one call never keeps a master busy for long. */
export const MAX_BATCH_OPERATIONS = 500;

export class Batcher {
  #queue: Waiting[] = [];
  #scheduled: NodeJS.Immediate | undefined;
  /** Script calls sent and not yet answered. */
  #outstanding = 0;

  constructor(private readonly send: SendBatch) {}

  /**
   * Queue `operation`. With `coalesce`, it leaves at the end of this event-loop turn with every
   * other operation queued meanwhile; without, it leaves now (after anything already queued, so
   * the order of operations on the master is the order of calls).
   */
  submit(operation: LockOperation, signal: AbortSignal, coalesce: boolean): Promise<OperationReply> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<OperationReply>((resolve, reject) => {
      const waiting: Waiting = { operation, signal, resolve, reject, onAbort: () => undefined };
      waiting.onAbort = () => {
        const index = this.#queue.indexOf(waiting);
        if (index >= 0) this.#queue.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', waiting.onAbort, { once: true });
      this.#queue.push(waiting);
      // An idle master gets the operation at once: nothing is waiting to share the call with it.
      if (!coalesce || (this.#outstanding === 0 && this.#queue.length === 1)) this.flush();
      // setImmediate runs after every I/O callback of this turn: replies that arrived together all
      // get to queue their next operation first. (node-redis writes on setImmediate too.)
      else this.#scheduled ??= setImmediate(() => this.flush());
    });
  }

  flush(): void {
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    while (this.#queue.length > 0) this.#sendChunk(this.#queue.splice(0, MAX_BATCH_OPERATIONS));
  }

  #sendChunk(chunk: Waiting[]): void {
    const withdraw = new AbortController();
    let live = chunk.length;
    for (const waiting of chunk) {
      waiting.signal.removeEventListener('abort', waiting.onAbort);
      // Sent: the answer still comes (and is recorded as late); only when nobody waits for any
      // operation of this call is it withdrawn, which node-redis can do while it is unsent.
      waiting.onAbort = () => {
        if (--live === 0) withdraw.abort(waiting.signal.reason);
      };
      waiting.signal.addEventListener('abort', waiting.onAbort, { once: true });
    }
    const settle = (each: (waiting: Waiting, index: number) => void): void => {
      chunk.forEach((waiting, index) => {
        waiting.signal.removeEventListener('abort', waiting.onAbort);
        each(waiting, index);
      });
    };
    this.#outstanding++;
    this.send(
      chunk.map((waiting) => waiting.operation),
      withdraw,
    )
      .finally(() => this.#outstanding--)
      .then(
        (replies) => settle((waiting, index) => waiting.resolve(replies[index]!)),
        (error: unknown) => settle((waiting) => waiting.reject(error)),
      );
  }
}
