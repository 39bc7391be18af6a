/**
 * The script call for one master: a batch of operations as one EVALSHA (EVAL again on NOSCRIPT),
 * tagged so its reply is known to be its own, followed by a WAIT with `replicas`, and decoded into
 * one answer per operation. The one helper with the EVALSHA fallback.
 */
import { randomBytes } from 'node:crypto';
import { MisplacedReplyError } from '../../errors.js';
import { ignore, type Connection } from '../../clients/connection.js';
import { decodeBatch, encodeCall, grants, type Announcement, type LockOperation } from '../../script/codec.js';
import { isGranted, type OperationReply } from '../../script/replies.js';
import type { ClockReading } from './clock-jumps.js';
import type { Route, ShardRole } from './shard.js';
import type { StallWatch } from './stall.js';

/**
 * Put first in every batch when the master's clock is watched (restartGuard.clockJumps): its TIME,
 * read by the same script run as the batch's votes, so each grant is judged with a fresh reading.
 * No keys, no ticket: it touches nothing.
 */
const CLOCK_READING: LockOperation = { kind: 'clock', keys: [], value: '', ttlMs: 0 };

/**
 * Every script call's tag (see the script's contract): unique in the process whichever node sends
 * it, and across copies of this module sharing a client (the random prefix).
 */
const TAG_PREFIX = randomBytes(4).toString('hex');
let lastTag = 0;

/**
 * How long a batch's WAIT may block: the shortest `replicationTimeoutMs` of its operations that
 * write a grant (a third of their call's per-master timeout: redlock.ts), so an unreplicated grant is
 * reported as such before the master times out; undefined for a batch that grants nothing
 * (releases, inspections).
 */
function replicationTimeoutMs(operations: readonly LockOperation[]): number | undefined {
  let timeoutMs: number | undefined;
  for (const operation of operations) {
    if (!grants(operation.kind)) continue;
    const ms = operation.replicationTimeoutMs ?? 1;
    timeoutMs = timeoutMs === undefined ? ms : Math.min(timeoutMs, ms);
  }
  return timeoutMs;
}

/** What a script call needs of its master (MasterVoter). */
export interface ScriptHost {
  readonly label: string;
  /** The `replicas` setting for this master: a grant counts only once this many replicas have it (WAIT); 0 = off. */
  readonly replicas: number;
  readonly shard: ShardRole | undefined;
  readonly stall: StallWatch;
  /** Commands sent and not answered: withdrawn when the connection drops. */
  readonly inFlight: Set<AbortController>;
  /** `client` answered READONLY: it reached a replica. */
  demoted(client: Connection): void;
  /** `client` answered a call with another command's reply. */
  outOfStep(client: Connection, error: MisplacedReplyError): void;
  /** With restartGuard.clockJumps: every call also reads the master's TIME, handed here. Absent: calls carry nothing extra. */
  readonly clockRead: ((reading: ClockReading) => void) | undefined;
}

/** One batch's script call on its way. */
export interface ScriptCall<R> {
  readonly client: Connection;
  readonly announcement: Announcement;
  readonly operations: LockOperation[];
  readonly route: Route;
  readonly withdraw: AbortController | undefined;
  readonly pick: (replies: OperationReply[]) => R;
}

/**
 * The script call's commands on `client`: ASKING before it on the `asking` route, and the WAIT
 * right behind it with `replicas` (its promise goes to `waited`).
 */
function scriptSender(
  host: ScriptHost,
  call: ScriptCall<unknown>,
  timeoutMs: number | undefined,
  waited: (reply: Promise<unknown>) => void,
): (args: readonly string[]) => Promise<unknown> {
  const { client } = call;
  const signal = call.withdraw?.signal;
  const asking = call.route === 'asking';
  // ASKING lets the next command, the script call right behind it, use a slot this shard imports.
  return (args) => {
    try {
      if (asking) client.send(['ASKING'], signal).catch(ignore);
      const reply = client.send(args, signal);
      if (timeoutMs !== undefined) {
        const acknowledged = client.send(['WAIT', String(host.replicas), String(timeoutMs)], signal);
        acknowledged.catch(ignore); // read below, or abandoned with the script call
        waited(acknowledged);
      }
      return reply;
    } catch (error) {
      return Promise.reject(error); // a client that throws instead of rejecting: the same failure
    }
  };
}

/** Send `call` as one script call and read its replies (EVAL again on NOSCRIPT). */
export function callScript<R>(host: ScriptHost, call: ScriptCall<R>): Promise<R> {
  const { client, withdraw } = call;
  const tag = TAG_PREFIX + (++lastTag).toString(36);
  // A cluster master's batch may span its slots: its keys go inline (declared keys share one slot).
  const inline = host.shard !== undefined && call.route === 'batch' && call.operations.length > 1;
  const operations = host.clockRead ? [CLOCK_READING, ...call.operations] : call.operations;
  const pick = host.clockRead ? readingClock(host.clockRead, call.pick) : call.pick;
  const { script: lua, command } = encodeCall(operations, tag, call.announcement, host.shard?.fenceKey, inline);
  // With `replicas`, a batch that may write a grant is followed, pipelined right behind the script
  // call, by a WAIT: it answers how many replicas have every earlier write of this connection, the
  // script's included. (Sent before it, it would count only the writes before this batch.)
  const timeoutMs = host.replicas > 0 ? replicationTimeoutMs(operations) : undefined;
  let waited: Promise<unknown> | undefined;
  const script = scriptSender(host, call, timeoutMs, (acknowledged) => {
    waited = acknowledged;
  });
  if (withdraw) host.inFlight.add(withdraw);
  const sentAt = host.stall.began();
  // One reaction per outcome, no async frames nor catch/then chains: this runs for every master
  // on every operation.
  const failed = (error: unknown): never => {
    if (withdraw) host.inFlight.delete(withdraw);
    host.stall.ended(sentAt, false);
    // A replica refuses the script's writes (READONLY, wrapped in a script error on Redis 6).
    if (error instanceof Error && error.message.includes('READONLY')) host.demoted(client);
    throw error;
  };
  const decoded = (reply: unknown, acknowledged: unknown): R => {
    let replies: OperationReply[];
    try {
      replies = decodeReplies(host, client, operations, tag, reply, acknowledged, timeoutMs ?? 0);
    } catch (error) {
      return failed(error);
    }
    // Bookkeeping first: ended may emit nodeUp, whose listener could throw.
    if (withdraw) host.inFlight.delete(withdraw);
    host.stall.ended(sentAt, true);
    return pick(replies, sentAt);
  };
  const answered = (reply: unknown): R | Promise<R> =>
    waited ? waited.then((acknowledged) => decoded(reply, acknowledged), failed) : decoded(reply, undefined);
  return script(command).then(answered, (error: unknown) => {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) return failed(error);
    // Flushed or restarted master: EVAL runs it and caches it again (a WAIT follows it too).
    return script(['EVAL', lua.source, ...command.slice(2)]).then(answered, failed);
  });
}

/**
 * `pick` for a batch led by CLOCK_READING: the reading goes to `clockRead` (none if TIME was refused:
 * the ACL needs +time), the rest to `pick`.
 */
function readingClock<R>(
  clockRead: (reading: ClockReading) => void,
  pick: (replies: OperationReply[]) => R,
): (replies: OperationReply[], sentAtMs: number) => R {
  return (replies, sentAtMs) => {
    const [time, ...rest] = replies;
    if (time && isGranted(time)) clockRead({ masterMs: time.detail, sentAtMs, receivedAtMs: performance.now() });
    return pick(rest);
  };
}

/** A script call's reply (and its WAIT's, with `replicas`) as one answer per operation. */
function decodeReplies(
  host: ScriptHost,
  client: Connection,
  operations: LockOperation[],
  tag: string,
  reply: unknown,
  acknowledged: unknown,
  timeoutMs: number,
): OperationReply[] {
  const replies = decodeBatch(reply, operations, tag);
  if (!replies || (acknowledged !== undefined && typeof acknowledged !== 'number')) {
    // The script's or the WAIT's answer is another command's.
    const misplaced = new MisplacedReplyError(host.label, replies ? acknowledged : reply);
    host.outOfStep(client, misplaced);
    throw misplaced;
  }
  if (typeof acknowledged !== 'number' || acknowledged >= host.replicas) return replies;
  // Written on the master only: a failover to a replica would lose it, so it is no grant.
  const unreplicated = { acknowledged, wanted: host.replicas, timeoutMs };
  return replies.map((answer, i) => (isGranted(answer) && grants(operations[i]!.kind) ? { ...answer, unreplicated } : answer));
}
