/**
 * The script call for one master: a batch of operations as one EVALSHA (EVAL again on NOSCRIPT),
 * tagged so its reply is known to be its own (a lean call's tag is its value: codec.ts), followed by
 * a WAIT with `replicas`, and decoded into one answer per operation. The one helper with the EVALSHA fallback.
 */
import { MisplacedReplyError } from '../../errors.js';
import { ignore, type Connection } from '../../clients/connection.js';
import { decodeCall, encodeCall, type Announcement, type EncodedCall, type LockOperation } from '../../script/codec.js';
import { grants } from '../../script/operations.js';
import { isGranted, type OperationReply } from '../../script/replies.js';
import type { ClockReading } from './clock-jumps.js';
import type { Route, ShardRole } from './shard.js';
import type { StallWatch } from './stall.js';

/**
 * Put first in every batch when the master's clock is watched (restartGuard.clockJumps): its TIME,
 * read by the same script run as the batch's votes, so each grant is judged with a fresh reading.
 * No keys, no ticket: it touches nothing.
 */
const CLOCK_READING: LockOperation = { kind: 'clock', keys: [], value: '', ticket: '', placeMs: undefined };

/**
 * How long a batch's WAIT may block: the shortest `replicationTimeoutMs` of its operations that
 * write a grant (a third of their call's per-master timeout: redlock.ts), so an unreplicated grant is
 * reported as such before the master times out; undefined for a batch that grants nothing
 * (releases, inspections).
 */
export function replicationTimeoutMs(operations: readonly LockOperation[]): number | undefined {
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
 * Send `call` as one script call and read its replies: ASKING before it on the `asking` route, and
 * with `replicas` a WAIT pipelined right behind it. On NOSCRIPT (a flushed or restarted master) it
 * is sent again as EVAL (`source`), which runs it and caches it again. The commands are sent here,
 * inline, not through a helper: this runs for every master on every operation.
 */
export function callScript<R>(host: ScriptHost, call: ScriptCall<R>, source?: string): Promise<R> {
  const { client, withdraw } = call;
  // A cluster master's batch may span its slots: its keys go inline (declared keys share one slot).
  const inline = host.shard !== undefined && call.route === 'batch' && call.operations.length > 1;
  const operations = host.clockRead ? [CLOCK_READING, ...call.operations] : call.operations;
  const pick = host.clockRead ? readingClock(host.clockRead, call.pick) : call.pick;
  const encoded = encodeCall(operations, undefined, call.announcement, host.shard?.fenceKey, inline);
  const command = source === undefined ? encoded.command : ['EVAL', source, ...encoded.command.slice(2)];
  // With `replicas`, a batch that may write a grant is followed, pipelined right behind the script
  // call, by a WAIT: it answers how many replicas have every earlier write of this connection, the
  // script's included. (Sent before it, it would count only the writes before this batch.)
  const timeoutMs = host.replicas > 0 ? replicationTimeoutMs(operations) : undefined;
  const signal = withdraw?.signal;
  if (withdraw) host.inFlight.add(withdraw);
  const sentAt = host.stall.began();
  let reply: Promise<unknown>;
  let waited: Promise<unknown> | undefined;
  try {
    // ASKING lets the next command, the script call right behind it, use a slot this shard imports.
    if (call.route === 'asking') client.send(['ASKING'], signal).catch(ignore);
    reply = client.send(command, signal);
    if (timeoutMs !== undefined) {
      waited = client.send(['WAIT', String(host.replicas), String(timeoutMs)], signal);
      waited.catch(ignore); // read below, or abandoned with the script call
    }
  } catch (error) {
    reply = Promise.reject(error); // a client that throws instead of rejecting: the same failure
  }
  // One reaction per outcome, no async frames nor catch/then chains: this runs for every master
  // on every operation.
  const failed = (error: unknown): never => {
    if (withdraw) host.inFlight.delete(withdraw);
    host.stall.ended(sentAt, false);
    // A replica refuses the script's writes (READONLY, wrapped in a script error on Redis 6).
    if (error instanceof Error && error.message.includes('READONLY')) host.demoted(client);
    throw error;
  };
  const decoded = (answer: unknown, acknowledged?: unknown): R => {
    // The usual answer decodes in one step; a misplaced one, or one with a WAIT's, in decodeReplies.
    let replies = acknowledged === undefined ? decodeCall(answer, operations, encoded) : undefined;
    if (replies === undefined) {
      try {
        replies = decodeReplies(host, client, operations, encoded, answer, acknowledged, timeoutMs ?? 0);
      } catch (error) {
        return failed(error);
      }
    }
    // Bookkeeping first: ended may emit nodeUp, whose listener could throw.
    if (withdraw) host.inFlight.delete(withdraw);
    host.stall.ended(sentAt, true);
    return pick(replies, sentAt);
  };
  const answered = waited ? (answer: unknown): Promise<R> => waited.then((acknowledged) => decoded(answer, acknowledged), failed) : decoded;
  return reply.then(answered, (error: unknown) => {
    if (source !== undefined || !(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) return failed(error);
    if (withdraw) host.inFlight.delete(withdraw);
    host.stall.ended(sentAt, true);
    return callScript(host, call, encoded.script.source);
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
  encoded: EncodedCall,
  reply: unknown,
  acknowledged: unknown,
  timeoutMs: number,
): OperationReply[] {
  const replies = decodeCall(reply, operations, encoded);
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
