/**
 * An operator's call (an inspection, a force release): its options, checked before any network
 * call, and the fan-out that sends its operation to every master and waits for every answer. Like a
 * lock's, the operation is one of the script's (script/codec.ts) and reaches every kind of voter (a
 * master, a Redis Cluster by the resource's slot, a Sentinel-managed master), each master bounded
 * by the per-master timeout.
 */
import type { Voter } from '../voters/voter.js';
import { fanOut, type Answer } from '../protocol/fan-out.js';
import type { LockOperation } from '../script/codec.js';
import type { OperationReply } from '../script/replies.js';
import { checkNodeTimeout, checkSignal } from '../config/validation.js';
import { describe } from '../config/describe.js';
import { newLockValue } from '../lease/values.js';

/** The per-master timeout of an inspection or a force release when neither the call nor the constructor sets one. */
const DEFAULT_INSPECT_TIMEOUT_MS = 500;

/** The per-master timeout and signal of an inspection or a force release, checked before any network call. */
export function operatorSettings(
  options: unknown,
  constructorNodeTimeoutMs: number | undefined,
  extra: readonly string[] = [],
): { nodeTimeoutMs: number; signal?: AbortSignal } {
  if (options === undefined) return { nodeTimeoutMs: constructorNodeTimeoutMs ?? DEFAULT_INSPECT_TIMEOUT_MS };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`options must be an object ({ ${['signal', 'nodeTimeout', ...extra].join(', ')} }), got ${describe(options)}`);
  }
  const record = options as Record<string, unknown>;
  const known = ['signal', 'nodeTimeout', ...extra];
  for (const key of Object.keys(record)) {
    if (!known.includes(key)) throw new TypeError(`unknown option '${key}'; known options: ${known.join(', ')}`);
  }
  const { signal, nodeTimeout } = record;
  checkSignal(signal);
  if (nodeTimeout !== undefined) checkNodeTimeout(nodeTimeout);
  return { nodeTimeoutMs: nodeTimeout ?? constructorNodeTimeoutMs ?? DEFAULT_INSPECT_TIMEOUT_MS, ...(signal ? { signal } : {}) };
}

export interface OperatorCall {
  readonly nodeTimeoutMs: number;
  readonly signal?: AbortSignal;
  /** Send with the other operations of the event-loop turn (the Redlock's `batching`). */
  readonly batching: boolean;
}

/** One master's answer to an operator's operation: its reply and when it came, or why there is none. */
type Answered = { readonly reply: OperationReply; readonly atMs: number } | { readonly error: string };

const answered: Answer = Object.freeze({ status: 'granted' });

/**
 * `operation` on every master at once, each bounded by the per-master timeout; every answer is
 * waited for (no quorum decides early). Rejects with the signal's reason if it aborts.
 */
export async function onEveryMaster(voters: readonly Voter[], operationFor: (index: number) => LockOperation, call: OperatorCall): Promise<Answered[]> {
  const replies: { reply: OperationReply; atMs: number }[] = [];
  const labels = voters.map((voter) => voter.label);
  const result = await fanOut(
    labels,
    (index, cancellation) =>
      voters[index]!.submit(operationFor(index), cancellation, call.batching).then((reply) => {
        replies[index] = { reply, atMs: Date.now() };
        return reply;
      }),
    { quorum: labels.length, timeoutMs: call.nodeTimeoutMs, waitForAll: true, signal: call.signal },
    // A refusal in the script's words (status 2) is an answer too: the caller reads it.
    () => answered,
  );
  call.signal?.throwIfAborted();
  return result.outcomes.map((outcome, index) => {
    if (outcome.status === 'granted') return replies[index]!;
    if (outcome.status === 'timeout') return { error: `no answer within ${call.nodeTimeoutMs} ms` };
    return { error: outcome.error?.message ?? `no answer (${outcome.status})` };
  });
}

/** The operation's value: its own, so its announcement is one release to every waiter, and cluster routing tells calls apart. */
export const operationOf = (kind: 'inspect' | 'force-release', resource: string): LockOperation => ({ kind, keys: [resource], value: newLockValue(), ttlMs: 0 });
