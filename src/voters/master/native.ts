/**
 * The server's own commands for the plain lock (issue 39; docs/design/servers.md). What a master
 * offers is learnt on each new connection, beside its INFO: a native compare-and-delete (Redis
 * 8.4+ `DELEX key IFEQ value`, Valkey 9 `DELIFEQ key value`, each with `SET … IFEQ`) and whether it
 * runs scripts at all. Where it has both, a lone release of one key goes as native commands while
 * the key is not contended here, and has a line there announced by script; acquires stay scripts
 * (the line: see takes()). Where it has no scripting, the plain lock is native and anything else
 * is refused (NoScriptingError).
 *
 * A native call is pipelined on one connection; a grant's ends with `ECHO value`: the value is
 * unique to the call, so a reply that is not its own (a connection out of step) is known, as a lean
 * script's.
 */
import { MisplacedReplyError, NoScriptingError } from '../../errors.js';
import type { Connection } from '../../clients/connection.js';
import type { LockOperation } from '../../script/codec.js';
import { queueKey } from '../../script/marks.js';
import { ReplyStatus, type OperationReply } from '../../script/replies.js';
import { callScript, replicationTimeoutMs, type ScriptCall, type ScriptHost } from './script-call.js';

/** What a master offers beyond the lock script, learnt per connection (learnOffers). */
export interface Offers {
  /** It runs Lua scripts (false: no engine, or EVAL and SCRIPT unknown). */
  readonly scripting: boolean;
  /** Its compare-and-delete of `key` if it holds `value`, as a command; undefined if it has none. */
  readonly compareAndDelete: ((key: string, value: string) => string[]) | undefined;
}

/** Scripts are refused for good here: no engine (a Valkey built without Lua), or the commands are unknown (renamed away). */
const NO_SCRIPTING = /Could not find scripting engine|unknown command .?(?:SCRIPT|EVAL|EVALSHA)\b/i;

/**
 * The native compare-and-delete a server's INFO says it has: Valkey 9.0+ `DELIFEQ`, Redis 8.4+
 * `DELEX … IFEQ` (a Valkey also reports a Redis version, its compatibility's: it is read first).
 * Nothing is asked that INFO does not answer, so a user whose ACL lists the commands of an older
 * release sends nothing new; one without `+info` (or its new commands: NOPERM) keeps the scripts.
 */
function compareAndDeleteOf(info: string): Offers['compareAndDelete'] {
  const valkey = /^valkey_version:(\d+)\.(\d+)/m.exec(info);
  if (valkey) return Number(valkey[1]) >= 9 ? (key, value) => ['DELIFEQ', key, value] : undefined;
  const redis = /^redis_version:(\d+)\.(\d+)/m.exec(info);
  const [major, minor] = redis ? [Number(redis[1]), Number(redis[2])] : [0, 0];
  return major > 8 || (major === 8 && minor >= 4) ? (key, value) => ['DELEX', key, 'IFEQ', value] : undefined;
}

/**
 * Learn what `client` offers: the compare-and-delete from the connection's `info` (its INFO, read
 * anyway), and scripting from the lock scripts' `SCRIPT LOAD` (sent anyway: the first EVALSHA finds
 * them), pipelined behind the INFO. A failure other than "no scripting" is `onFailure`'s, and leaves
 * the scripts in use (EVALSHA falls back to EVAL).
 */
export async function learnOffers(client: Connection, scripts: readonly { readonly source: string }[], info: Promise<string>, onFailure: (error: unknown) => void): Promise<Offers> {
  const loaded = Promise.all(scripts.map(({ source }) => client.send(['SCRIPT', 'LOAD', source]))).then(
    () => true,
    (error: unknown) => {
      if (error instanceof Error && NO_SCRIPTING.test(error.message)) return false;
      onFailure(error);
      return true;
    },
  );
  const [text, scripting] = await Promise.all([info, loaded]);
  return { scripting, compareAndDelete: compareAndDeleteOf(text) };
}

/** How long a key refused or found with a line here goes by script: its next calls would pay a round trip more. */
const CONTENDED_MS = 10_000;
/** Keys remembered as contended, at most: the oldest go first. */
const MAX_CONTENDED = 1_024;

/** A master's script host, with what its current connection offers (undefined until learnt: scripts). */
export interface MasterHost extends ScriptHost {
  native: NativeCommands | undefined;
}

/**
 * Send `call` to its master: as native commands where they serve (NativeCommands.takes), else as
 * the script call. Where the master has both, a script's refusal of a lone acquire marks its key
 * contended here.
 */
export function callMaster<R>(host: MasterHost, call: ScriptCall<R>): Promise<R> {
  const native = host.native;
  if (native === undefined) return callScript(host, call);
  if (host.shard === undefined && call.route === 'batch' && native.takes(call.operations)) return callNative(host, call, native);
  if (!native.offers.compareAndDelete) return callScript(host, call);
  const { pick, operations } = call;
  return callScript(host, { ...call, pick: (replies) => (native.scriptAnswered(operations, replies), pick(replies)) });
}

/** `call` as native commands, watched as a script call is (stall, in flight, misplaced replies, a replica's READONLY). */
async function callNative<R>(host: MasterHost, call: ScriptCall<R>, native: NativeCommands): Promise<R> {
  const { client, withdraw, operations } = call;
  const script = (lined: LockOperation[]): Promise<OperationReply[]> => callScript(host, { ...call, operations: lined, pick: (replies) => replies });
  if (withdraw) host.inFlight.add(withdraw);
  const sentAt = host.stall.began();
  try {
    const { replies, masterMs } = await native.send({ label: host.label, replicas: host.replicas, script }, client, operations, host.clockRead !== undefined, withdraw?.signal);
    if (masterMs !== undefined) host.clockRead?.({ masterMs, sentAtMs: sentAt, receivedAtMs: performance.now() });
    host.stall.ended(sentAt, true);
    return call.pick(replies);
  } catch (error) {
    host.stall.ended(sentAt, false);
    if (native.offers.scripting && error instanceof Error && /^NOPERM|^ERR unknown command/.test(error.message)) {
      // The user's ACL lists the scripts' commands and not the native ones (or the server is not
      // what its INFO said: a client that reconnects unseen): scripts on this connection from now
      // on, and this release again by script.
      if (host.native === native) host.native = undefined;
      return callScript(host, call);
    }
    if (error instanceof MisplacedReplyError) host.outOfStep(client, error);
    else if (error instanceof Error && error.message.includes('READONLY')) host.demoted(client);
    throw error;
  } finally {
    if (withdraw) host.inFlight.delete(withdraw);
  }
}

/** What NativeCommands.send needs of its master. */
interface NativeHost {
  readonly label: string;
  readonly replicas: number;
  /** Send `operations` by script on the same connection (a line's announcement). */
  readonly script: (operations: LockOperation[]) => Promise<OperationReply[]>;
}

/** One connection's offers and the keys contended here lately. */
export class NativeCommands {
  /** Contended keys, with when they stop counting as such (insertion order: oldest first). */
  readonly #contended = new Map<string, number>();

  constructor(readonly offers: Offers) {}

  /** The commands for `offers`; none where the master offers nothing but scripts (callMaster then sends scripts alone). */
  static for(offers: Offers): NativeCommands | undefined {
    return offers.scripting && !offers.compareAndDelete ? undefined : new NativeCommands(offers);
  }

  /**
   * Whether `operations` go as native commands: on a master without scripting, every one that can
   * (the others were refused before batching: refusal()); on one with it, a lock's lone release of
   * one uncontended key. An acquire stays a script there: a native SET holds the key for a moment
   * even while an earlier waiter is in its line, and such moments can refuse that waiter on a
   * majority, again and again. So does an attempt's rollback: it has no ticket, and release.lua
   * announces a key it finds free with a line only for a release with one (model/README.md,
   * "Native releases", mutation 18).
   */
  takes(operations: readonly LockOperation[]): boolean {
    if (!this.offers.scripting) return true;
    const operation = operations[0]!;
    if (operations.length !== 1 || operation.kind !== 'release' || operation.ticket === '' || operation.keep || operation.keys.length !== 1) return false;
    const until = this.#contended.get(operation.keys[0]!);
    if (until === undefined) return true;
    if (until > performance.now()) return false;
    this.#contended.delete(operation.keys[0]!);
    return true;
  }

  /** The key of a lone acquire a script refused: contended, its release goes by script (it would find the line and pay a round trip more). */
  scriptAnswered(operations: readonly LockOperation[], replies: readonly OperationReply[]): void {
    const operation = operations[0]!;
    if (operations.length === 1 && operation.kind === 'acquire' && operation.keys.length === 1 && replies[0]!.status !== ReplyStatus.GRANTED) {
      this.#contend(operation.keys[0]!);
    }
  }

  #contend(key: string): void {
    this.#contended.delete(key);
    this.#contended.set(key, performance.now() + CONTENDED_MS);
    if (this.#contended.size > MAX_CONTENDED) this.#contended.delete(this.#contended.keys().next().value!);
  }

  /** Why `operation` cannot run on a master without scripting, or undefined if it can (natively). A cluster's shard takes scripts only. */
  refusal(label: string, operation: LockOperation, shard: boolean): NoScriptingError | undefined {
    if (this.offers.scripting) return undefined;
    const feature = shard ? 'a Redis Cluster' : featureOf(operation);
    if (feature === undefined && this.offers.compareAndDelete) return undefined;
    return new NoScriptingError(label, feature ?? 'the lock (it has no compare-and-delete either: DELEX or DELIFEQ)');
  }

  /**
   * `operations`' native commands, pipelined on `client` (with TIME first when `clock` is asked, and
   * WAIT last with `replicas`), decoded into one reply each; a release that found the key's line
   * has it announced by script.
   */
  async send(host: NativeHost, client: Connection, operations: LockOperation[], clock: boolean, withdraw?: AbortSignal): Promise<{ replies: OperationReply[]; masterMs?: number }> {
    const lined = this.offers.scripting;
    const plans = operations.map((operation) => this.#plan(operation, lined));
    const commands: string[][] = clock ? [['TIME']] : [];
    for (const plan of plans) commands.push(...plan.commands);
    const timeoutMs = host.replicas > 0 ? replicationTimeoutMs(operations) : undefined;
    if (timeoutMs !== undefined) commands.push(['WAIT', String(host.replicas), String(timeoutMs)]);
    const answers = await Promise.all(commands.map((command) => client.send(command, withdraw).then(ok, failed)));
    let at = clock ? 1 : 0;
    // TIME refused (an ACL without +time): no reading, as on a script call.
    const masterMs = clock && !answers[0]!.error ? timeOf(answers[0]) : undefined;
    const replies: OperationReply[] = [];
    for (const plan of plans) {
      const mine = answers.slice(at, (at += plan.commands.length));
      replies.push(await this.#decode(host, plan, mine));
    }
    if (timeoutMs !== undefined) unreplicated(replies, operations, answers[at], host.replicas, timeoutMs);
    return masterMs === undefined ? { replies } : { replies, masterMs };
  }

  #plan(operation: LockOperation, lined: boolean): Plan {
    const key = operation.keys[0]!;
    const { value } = operation;
    // A grant's answer ends with the ECHO of its value (unique to the attempt): a reply that is not
    // the call's own is known. A release answers a count, as a lean script's does, which a misplaced
    // reply could only miscount: it goes without.
    const echo = ['ECHO', value];
    switch (operation.kind) {
      case 'acquire': // without scripting only
        return { operation, commands: [['SET', key, value, 'NX', 'PX', String(operation.ttlMs)], ['PTTL', key], echo] };
      case 'release':
        return { operation, commands: [this.offers.compareAndDelete!(key, value), ...(lined ? [['EXISTS', queueKey(key)]] : [])] };
      case 'extend':
        return { operation, commands: [['SET', key, value, 'IFEQ', value, 'PX', String(operation.ttlMs)], echo] };
      default: // clock (refusal() let nothing else through)
        return { operation, commands: [['TIME'], echo] };
    }
  }

  async #decode(host: NativeHost, plan: Plan, answers: Answer[]): Promise<OperationReply> {
    const { operation } = plan;
    const [first, second] = answers;
    if (operation.kind !== 'release') {
      const echoed = answers.at(-1)!;
      if (echoed.error || echoed.value !== operation.value) throw misplaced(host.label, echoed);
    }
    if (operation.kind === 'clock') return { status: ReplyStatus.GRANTED, detail: timeOf(first) };
    if (operation.kind === 'extend') return { status: settled(first) === 'OK' ? ReplyStatus.GRANTED : ReplyStatus.REFUSED, detail: 0 };
    if (operation.kind === 'acquire') {
      return settled(first) === 'OK' ? { status: ReplyStatus.GRANTED, detail: 0 } : { status: ReplyStatus.REFUSED, detail: Number(settled(second)) };
    }
    // A release: a key of another type (a read hold's) goes by script; a line there is told, by script.
    if (!this.offers.scripting) return { status: Number(settled(first)), detail: 0 };
    if (first!.error || settled(second) !== 0) {
      if (!first!.error) this.#contend(operation.keys[0]!);
      const [reply] = await host.script([operation]);
      return first!.error ? reply! : { ...reply!, status: reply!.status + Number(settled(first)) };
    }
    return { status: Number(settled(first)), detail: 0 };
  }
}

interface Plan {
  readonly operation: LockOperation;
  readonly commands: string[][];
}

/** One pipelined command's answer: its value, or the error the server answered it with. */
interface Answer {
  readonly value?: unknown;
  readonly error?: Error;
}
const ok = (value: unknown): Answer => ({ value });
const failed = (error: unknown): Answer => ({ error: error instanceof Error ? error : new Error(String(error)) });

/** An answer's value; a server error fails the call (READONLY, a refused command, a lost connection). */
function settled(answer: Answer | undefined): unknown {
  if (answer?.error) throw answer.error;
  return answer?.value;
}

function timeOf(answer: Answer | undefined): number {
  const [seconds, micros] = settled(answer) as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

function misplaced(label: string, echoed: Answer): Error {
  return echoed.error ?? new MisplacedReplyError(label, echoed.value); // an error: the connection failed, that is the error
}

/** With `replicas`: grants fewer replicas than wanted acknowledged count for nothing (as a script call's). */
function unreplicated(replies: OperationReply[], operations: readonly LockOperation[], answer: Answer | undefined, wanted: number, timeoutMs: number): void {
  const acknowledged = Number(settled(answer));
  if (acknowledged >= wanted) return;
  replies.forEach((reply, index) => {
    const kind = operations[index]!.kind;
    if (reply.status === ReplyStatus.GRANTED && (kind === 'acquire' || kind === 'extend')) replies[index] = { ...reply, unreplicated: { acknowledged, wanted, timeoutMs } };
  });
}

/** The feature an operation needs scripting for; undefined for what runs natively (a plain lock on one key). */
function featureOf(operation: LockOperation): string | undefined {
  switch (operation.kind) {
    case 'acquire':
      if (operation.fenced) return 'fencing tokens';
      return operation.keys.length > 1 ? 'a lock on several resources' : undefined;
    case 'admit':
      return operation.rule.grouped ? 'a semaphore' : 'a read-write lock';
    case 'release':
    case 'extend':
      return operation.keys.length > 1 ? 'a lock on several resources' : undefined;
    case 'clock':
      return undefined;
    case 'fence':
      return 'fencing tokens';
    default:
      return 'inspecting or force-releasing a lock';
  }
}
