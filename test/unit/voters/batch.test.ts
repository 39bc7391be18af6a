import { describe, expect, it } from 'vitest';
import { Batcher, MAX_BATCH_OPERATIONS, type SendBatch } from '../../../src/voters/master/batch.js';
import { Cancellation } from '../../../src/protocol/fan-out.js';
import type { LockOperation } from '../../../src/script/codec.js';
import type { OperationReply } from '../../../src/script/replies.js';

/** A fake master: records each call's operations and answers when told to. */
function fakeMaster() {
  const calls: Array<{ operations: LockOperation[]; answer: () => void; withdrawn: boolean }> = [];
  const send: SendBatch = (operations, pick) => {
    let answer!: () => void;
    const replies = new Promise<OperationReply[]>((resolve) => {
      answer = () => resolve(operations.map((_, i) => ({ status: 1, detail: i })));
    }).then(pick);
    const call = { operations, answer, withdrawn: false };
    calls.push(call);
    return { replies, withdraw: () => (call.withdrawn = true) };
  };
  return { calls, batcher: new Batcher(send) };
}

const op = (key: string): LockOperation => ({ kind: 'extend', keys: [key], value: 'v', ttlMs: 1000 });
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Batcher', () => {
  it('sends the first operation of a turn at once and the rest of the turn as one call at its end', async () => {
    const { calls, batcher } = fakeMaster();
    const replies = ['a', 'b', 'c', 'd'].map((key) => batcher.submit(op(key), new Cancellation(), true));
    expect(calls.map((call) => call.operations.map((o) => o.keys[0]))).toEqual([['a']]);
    await nextTurn();
    expect(calls.map((call) => call.operations.map((o) => o.keys[0]))).toEqual([['a'], ['b', 'c', 'd']]);
    for (const call of calls) call.answer();
    // Replies are split back in order: each operation gets its own answer.
    expect(await Promise.all(replies)).toEqual([
      { status: 1, detail: 0 },
      { status: 1, detail: 0 },
      { status: 1, detail: 1 },
      { status: 1, detail: 2 },
    ]);
  });

  it('without coalescing every operation is its own call, in call order', () => {
    const { calls, batcher } = fakeMaster();
    for (const key of ['a', 'b', 'c']) void batcher.submit(op(key), new Cancellation(), false);
    expect(calls.map((call) => call.operations.map((o) => o.keys[0]))).toEqual([['a'], ['b'], ['c']]);
  });

  it('an uncoalesced operation leaves after what is already queued, keeping the order', () => {
    const { calls, batcher } = fakeMaster();
    void batcher.submit(op('first'), new Cancellation(), true); // first of the turn: sent at once
    void batcher.submit(op('queued'), new Cancellation(), true);
    void batcher.submit(op('now'), new Cancellation(), false);
    expect(calls.map((call) => call.operations.map((o) => o.keys[0]))).toEqual([['first'], ['queued', 'now']]);
  });

  it('an operation cancelled before the flush is dropped and rejects with the reason', async () => {
    const { calls, batcher } = fakeMaster();
    void batcher.submit(op('busy'), new Cancellation(), true);
    const cancellation = new Cancellation();
    const dropped = batcher.submit(op('dropped'), cancellation, true);
    const kept = batcher.submit(op('kept'), new Cancellation(), true);
    cancellation.cancel(new Error('timeout'));
    await expect(dropped).rejects.toThrow('timeout');
    await nextTurn();
    expect(calls[1]!.operations.map((o) => o.keys[0])).toEqual(['kept']);
    calls[1]!.answer();
    await expect(kept).resolves.toEqual({ status: 1, detail: 0 });
  });

  it('a sent call is withdrawn only when every operation in it was cancelled; otherwise answers arrive late', async () => {
    const { calls, batcher } = fakeMaster();
    void batcher.submit(op('busy'), new Cancellation(), true);
    const [first, second] = [new Cancellation(), new Cancellation()];
    const late = batcher.submit(op('x'), first, true);
    void batcher.submit(op('y'), second, true);
    await nextTurn();
    first.cancel(new Error('timeout'));
    expect(calls[1]!.withdrawn).toBe(false);
    second.cancel(new Error('timeout'));
    expect(calls[1]!.withdrawn).toBe(true);
    calls[1]!.answer();
    await expect(late).resolves.toEqual({ status: 1, detail: 0 });
  });

  it(`splits a turn of more than ${MAX_BATCH_OPERATIONS} operations into calls of at most that many`, async () => {
    const { calls, batcher } = fakeMaster();
    void batcher.submit(op('busy'), new Cancellation(), true);
    for (let i = 0; i < MAX_BATCH_OPERATIONS + 10; i++) void batcher.submit(op(`k${i}`), new Cancellation(), true);
    await nextTurn();
    expect(calls.map((call) => call.operations.length)).toEqual([1, MAX_BATCH_OPERATIONS, 10]);
  });
});
