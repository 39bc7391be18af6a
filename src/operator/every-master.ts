/**
 * An operator's call (an inspection, a force release): its options, checked before any network
 * call, and the fan-out that sends its operation to every master and waits for every answer. Like a
 * lock's, the operation is one of the script's (script/codec.ts) and reaches every kind of voter (a
 * master, a Redis Cluster by the resource's slot, a Sentinel-managed master), each master bounded
 * by the per-master timeout.
 */
import type { FanOutResult } from '../protocol/fan-out.js';
import { granted } from '../protocol/fan-out.js';
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

/** What an operator's call needs of the masters: the one fan-out (acquisition/masters.ts). */
export interface OperatorMasters {
  readonly count: number;
  readonly labels: readonly string[];
  fanOut(
    operation: (index: number) => LockOperation,
    settings: { quorum: number; nodeTimeoutMs: number; batching: boolean },
    call: { signal?: AbortSignal | undefined; waitForAll: boolean; onReply: (index: number, reply: OperationReply) => void; judge: () => typeof granted },
  ): Promise<FanOutResult>;
  keysMatching(pattern: string, timeoutMs: number, signal?: AbortSignal): Promise<(string[] | undefined)[]>;
}

/**
 * `operation` on every master at once, each bounded by the per-master timeout; every answer is
 * waited for (no quorum decides early). Rejects with the signal's reason if it aborts.
 */
export async function onEveryMaster(masters: OperatorMasters, operationFor: (index: number) => LockOperation, call: OperatorCall): Promise<Answered[]> {
  const replies: { reply: OperationReply; atMs: number }[] = [];
  const settings = { quorum: masters.count, nodeTimeoutMs: call.nodeTimeoutMs, batching: call.batching };
  const result = await masters.fanOut(operationFor, settings, {
    signal: call.signal,
    waitForAll: true,
    onReply: (index, reply) => (replies[index] = { reply, atMs: Date.now() }),
    // A refusal in the script's words (status 2) is an answer too: the caller reads it.
    judge: () => granted,
  });
  call.signal?.throwIfAborted();
  return result.outcomes.map((outcome, index) => {
    if (outcome.status === 'granted') return replies[index]!;
    if (outcome.status === 'timeout') return { error: `no answer within ${call.nodeTimeoutMs} ms` };
    return { error: outcome.error?.message ?? `no answer (${outcome.status})` };
  });
}

/** The operation's value: its own, so its announcement is one release to every waiter, and cluster routing tells calls apart. */
export function operationOf(kind: 'inspect' | 'force-release', resource: string): LockOperation {
  const common = { keys: [resource], value: newLockValue() };
  return kind === 'inspect' ? { kind, ...common } : { kind, ...common, expected: '' };
}
