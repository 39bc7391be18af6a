/**
 * The one Lua script, with its contract, and the encoding of operations into it. Every acquire,
 * extend and release goes through it: alone (a batch of one) or with the others issued in the same
 * event-loop tick. Its SHA1 is computed here so EVALSHA can be sent before SCRIPT LOAD has answered;
 * voters/master/script-call.ts falls back to EVAL on NOSCRIPT.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ReplyStatus, type KeySnapshot, type OperationReply } from './replies.js';
import { lean } from './lean.generated.js';
import { FIELDS, source } from './lua.generated.js';

export { FIELDS };
export type * from './operations.js';
import type { LockOperation, OperationKind } from './operations.js';
import { RELEASED_CHANNEL } from './marks.js';

/**
 * Where a resource's fence counter and wait queue live on each master: next to the resource, so ACL
 * key patterns that allow the resource allow them (on a cluster voter, in the resource's slot:
 * voters/cluster/slots.ts). Counters never expire (see docs/safety.md, "Memory and cleaning"); a queue expires with its last
 * ticket. The script names queues itself (the same rule), so they cost no argument.
 */
export const FENCE_SUFFIX = ':redlock-fence';
export { READ_HOLDS_MARK, QUEUE_SUFFIX } from './marks.js';
/** Where a resource's fence counter lives on a master (standalone: beside it). */
export type FenceKey = (resource: string) => string;
export const fenceKey: FenceKey = (resource) => resource + FENCE_SUFFIX;

/**
 * A ticket, "<ttl>-<process>.<n>": how long a master keeps it without a new attempt (ms, on the
 * master's clock), and an id unique across processes (a random prefix drawn once per process, 16
 * hex digits, then a counter: a ticket names a waiter, it guards nothing, so it needs no CSPRNG draw
 * of its own). A release that names a ticket first in line announces it on that process' own
 * channel (processChannel), where a standalone master can (line.lua announce()). It says nothing of
 * when its waiter came: each master places it by its own clock or the masters' (see the script's
 * lines), so a client whose wall clock is off neither jumps the line nor starves.
 */
export function newTicket(ttlMs: number): string {
  return `${Math.ceil(ttlMs)}-${TICKET_PREFIX}.${(++lastTicket).toString(36)}`;
}
const TICKET_PREFIX = randomBytes(8).toString('hex');
let lastTicket = 0;

/** The process a ticket names ("<ttl>-<process>.<n>"), or undefined if the string is no ticket; this process': processOf(newTicket(0)). */
export function processOf(ticket: string): string | undefined {
  return /^\d+-([0-9a-f]+)\./.exec(ticket)?.[1];
}

/**
 * This process' own announcement channel (issue 40): a standalone master announces a release there
 * when the first ticket in line is this process' (its other releases, on releasedChannel, every
 * process hears), so a hot key's release reaches one process, not all. Before it, a release woke
 * the head's process and was read and dropped by every other.
 */
export const processChannel = `${RELEASED_CHANNEL}:${TICKET_PREFIX}`;

/** The script's code for each operation of the core; a primitive's rule brings its own (AdmitRule). */
const kindCode: Record<Exclude<OperationKind, 'admit'>, string> = {
  acquire: 'a',
  extend: 'e',
  release: 'r',
  fence: 'f',
  inspect: 'i',
  'force-release': 'x',
  clock: 't',
};

/**
 * locks — run a sequence of lock operations, in order, atomically.
 * KEYS: the keys of every operation, concatenated in order; or none, with the keys at the start of
 *       ARGV instead ("inline": a batch on a cluster master whose keys are in several of its slots,
 *       which declared keys may not be).
 * ARGV: per operation three fields, its kind ('a' acquire, 'A' fenced acquire, a primitive's code: 's' read,
 *       'p'/'P' a racing/fair permit, 'e' extend, 'r' release, 'R' a refused attempt's rollback, 'f' fence, 'i' inspect, 'x' force
 *       release, 't' clock), its value, and how many keys of KEYS are its (its lock keys, then for
 *       'A', 'f' and 'i' their fence counters); then the fields its file's header declares (FIELDS,
 *       e.g. an acquire's ttlMs, ticket, ageMs, placeMs: the operation's properties of those names,
 *       '' for none). Then the number of inline keys (0: they are KEYS). Then how releases are announced:
 *       'PUBLISH' and the channel (a standalone master), or 'SPUBLISH' and a shard channel of the
 *       master's own (a cluster shard). Last, the call's tag (unique in the process), echoed as the
 *       reply's last element: a reply read for the wrong call (a connection whose replies no longer
 *       line up with its commands, as after bytes lost by a middlebox) is recognised instead of
 *       counted as that call's votes.
 * Queues: one sorted set per resource: "<resource>:redlock-queue", or on a cluster shard
 *       "{<resource>}:redlock-queue" when the resource has no hash tag (so it is in the resource's
 *       slot). It holds each waiting ticket t twice: t scored by its place, and '~'..t scored by
 *       minus its deadline on this master's clock (TIME + the ticket's ttl). The place is when the
 *       acquire began on the masters' clock, given by the acquire (the same number on every
 *       master, so masters that know the same tickets agree on who is first); an acquire that
 *       cannot give it yet (its process has not read the masters' clocks) is placed by this master
 *       at its own TIME minus the acquire's age, until it does. No client's wall clock enters it.
 *       A ticket whose deadline passed is dropped by whoever reads the queue next; the set's own
 *       PEXPIRE is the longest ticket ttl seen, so it dies with its last waiter. The first ticket
 *       is the live one with the lowest place. A waiter outside the line (a refused reader or
 *       permit with a ticket) leaves only the mark '~'..t, which lapses the same way: the queue
 *       exists while anyone waits for the key, and a release announces a freed key only then (no
 *       queue, no PUBLISH: nobody listens). Queues are not declared keys and every queue command (TIME included)
 *       is a pcall: a queue the master cannot serve now (a slot being migrated, the queue already
 *       moved; an ACL without the command) is no queue for this call, and the lock keys alone
 *       decide, as they would without queues. (A declared queue would turn such a release into
 *       TRYAGAIN instead.) The queue helpers are made on first use: closures cost every call.
 * Read holds: a key shared by readers is a sorted set of their values, each scored by its deadline on
 *       this master's clock (TIME + ttl), marked as ours by the member READ_HOLDS_MARK scored 0
 *       (below every deadline: never a reader, never lapsed, never the expiry), and the key itself
 *       expires (PEXPIREAT) with its last reader, or is deleted once only the mark is left: so to an
 *       exclusive acquire a key with readers is simply a key that exists, and it waits; lapsed
 *       readers are dropped whenever the set is written. (TIME is needed for reads.) A sorted set
 *       without the mark is not ours: a read treats it as a key of another type, extend and release
 *       of read holds never touch it, inspect reports its type ('zset') and force release leaves it
 *       alone. Every read-hold rule is in line()'s read-hold helpers.
 * Reply: per operation a status and a detail, flattened, then the tag; what each operation
 *       answers, and the statuses by name, are in replies.ts (the reply's contract).
 * Operations run in order, so a batch behaves exactly like the same calls sent one by one, and one
 * operation's refusal never affects another's. A key of another type is "not ours" (GET's WRONGTYPE
 * is caught) instead of failing the batch; any other refusal of GET (an ACL without +get) fails the
 * script, as a refused command does, rather than passing for "not held".
 */
// The scripts themselves are src/script/lua/*.lua and src/primitives/*.lua, assembled into lua.generated.ts and lean.generated.ts (scripts/assemble-lua.ts).

/** Where the script announces released keys; a message is `<who left>:<first ticket in line, or ''>:<key>` (parseReleased). */
export const releasedChannel = RELEASED_CHANNEL;

/**
 * Split a release announcement: who left (a released lock's value, or a ticket that left the queue
 * of a free key), the first ticket in the key's queue now (undefined: none; "<ticket>=<value>": the
 * key was handed to it, set to that value: handOffOf), and the key.
 */
export function parseReleased(message: string): { value: string; head: string | undefined; key: string } | undefined {
  const colon = message.indexOf(':');
  const second = colon < 0 ? -1 : message.indexOf(':', colon + 1);
  if (second < 0) return undefined;
  const head = message.slice(colon + 1, second);
  return { value: message.slice(0, colon), head: head === '' ? undefined : head, key: message.slice(second + 1) };
}

/** A head that was handed the key ("<ticket>=<value>", line.lua hand()), split; undefined for a head that was only named. */
export function handOffOf(head: string): { ticket: string; value: string } | undefined {
  const at = head.indexOf('=');
  return at < 0 ? undefined : { ticket: head.slice(0, at), value: head.slice(at + 1) };
}

/**
 * A release announcement with `prefix` (an ioredis keyPrefix, which the script's keys carry) taken
 * off its key: the key is the third field, after the two colons (who left, and the head ticket).
 */
export function withoutKeyPrefix(message: string, prefix: string): string {
  if (prefix === '') return message;
  const second = message.indexOf(':', message.indexOf(':') + 1);
  if (second < 0 || !message.startsWith(prefix, second + 1)) return message;
  return message.slice(0, second + 1) + message.slice(second + 1 + prefix.length);
}

/** A script a master runs by its SHA1 (EVALSHA, EVAL again on NOSCRIPT). */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}
const luaScript = (text: string): LuaScript => ({ source: text, sha: createHash('sha1').update(text).digest('hex') });

/** The batch script: any operations, in order (the contract above). */
export const lockScript = luaScript(source);
/**
 * The lean scripts (src/script/lua/lean.lua): one plain acquire or one release on a standalone
 * master, the usual call, run by the same branch file as in the batch script without the batch's
 * loop and dispatch. KEYS: the operation's keys. ARGV: its value, then its declared fields (FIELDS);
 * releases are announced on releasedChannel. The reply: a plain grant's value or a plain delete's
 * count (lean-acquire.lua, lean-release.lua), otherwise a batch of one's ending with the value.
 */
export const leanScripts = { acquire: luaScript(lean.acquire), release: luaScript(lean.release) } as const;
/** Every script, as a master is given them when a connection opens (SCRIPT LOAD). */
export const allScripts: readonly LuaScript[] = [lockScript, leanScripts.acquire, leanScripts.release];

type LeanKind = keyof typeof leanScripts;

/** A script call as it goes out: the script, its EVALSHA command, what its reply ends with, and which lean script it is (if one). */
export interface EncodedCall {
  readonly script: LuaScript;
  readonly command: string[];
  readonly tag: string;
  readonly lean: LeanKind | undefined;
}

/** Where a master announces releases: PUBLISH on the shared channel, or SPUBLISH on a cluster shard's own channel. */
export interface Announcement {
  readonly command: 'PUBLISH' | 'SPUBLISH';
  readonly channel: string;
}
export const standaloneAnnouncement: Announcement = { command: 'PUBLISH', channel: releasedChannel };

/** An operation's declared fields (FIELDS) as ARGV: text as is, numbers to the µs (plenty), absent as ''. */
function pushFields(args: string[], operation: LockOperation, code: string): void {
  const fields = FIELDS[code]!;
  for (let f = 0; f < fields.length; f++) {
    const field = (operation as unknown as Readonly<Record<string, unknown>>)[fields[f]!];
    args.push(typeof field === 'number' ? String(Math.round(field * 1000) / 1000) : typeof field === 'string' ? field : '');
  }
}

/** The script's code for an operation (a primitive brings its own). */
function codeOf(operation: LockOperation): string {
  if (operation.kind === 'admit') return operation.rule.code;
  if (operation.kind === 'acquire' && operation.fenced) return 'A';
  if (operation.kind === 'release' && operation.keep) return 'R';
  return kindCode[operation.kind];
}

/**
 * The EVALSHA/EVAL tail (numkeys, keys…, args…, inline count, announcement, tag) for a batch of
 * operations, after `head` (e.g. EVALSHA and the SHA1); with `inline`, numkeys is 0 and the keys
 * lead ARGV (see the script). `fenceKeyOf` places fence counters (a cluster voter's keep them in
 * the resource's slot).
 */
export function encodeBatch(
  operations: readonly LockOperation[],
  tag: string,
  announcement: Announcement = standaloneAnnouncement,
  fenceKeyOf: FenceKey = fenceKey,
  inline = false,
  head: readonly string[] = [],
): string[] {
  const keys: string[] = [];
  const args: string[] = [];
  for (const operation of operations) {
    const own = operation.keys;
    const code = codeOf(operation);
    keys.push(...own);
    // A fenced acquire, a fence and an inspection also own the resources' fence counters, after the lock keys.
    const counters = code === 'A' || code === 'f' || code === 'i';
    if (counters) for (const key of own) keys.push(fenceKeyOf(key));
    args.push(code, operation.value, String(counters ? 2 * own.length : own.length));
    pushFields(args, operation, code);
  }
  const { command, channel } = announcement;
  if (inline) return [...head, '0', ...keys, ...args, String(keys.length), command, channel, tag];
  return [...head, String(keys.length), ...keys, ...args, '0', command, channel, tag];
}

/** Lean commands already made, by operation: every master of a fan-out sends the same one. */
const leanCommands = new WeakMap<LockOperation, string[]>();

/**
 * Every batch call's tag (see the script's contract): unique in the process whichever node sends
 * it, and across copies of this module sharing a client (the random prefix).
 */
const TAG_PREFIX = randomBytes(4).toString('hex');
let lastTag = 0;

/**
 * The EVALSHA command for a batch of `operations`: a lone plain acquire or release on a standalone
 * master as its lean script, everything else as the batch script (encodeBatch), tagged with `tag`
 * (by default a new one). The encoded call's `tag` is what its reply must end with to be this
 * call's (a lean call's: its value).
 */
export function encodeCall(
  operations: readonly LockOperation[],
  tag: string | undefined,
  announcement: Announcement = standaloneAnnouncement,
  fenceKeyOf: FenceKey = fenceKey,
  inline = false,
): EncodedCall {
  const lone = operations.length === 1 && !inline && announcement === standaloneAnnouncement ? operations[0]! : undefined;
  const lean = lone && ((lone.kind === 'release' && !lone.keep) || (lone.kind === 'acquire' && !lone.fenced)) ? lone.kind : undefined;
  if (lone && lean) {
    // A lone plain acquire or release: its lean script (KEYS, then the value and its declared fields;
    // no tag, see decodeCall), its command made once, whichever master asks first.
    let command = leanCommands.get(lone);
    if (!command) {
      command = ['EVALSHA', leanScripts[lean].sha, String(lone.keys.length), ...lone.keys, lone.value];
      pushFields(command, lone, kindCode[lean]);
      leanCommands.set(lone, command);
    }
    return { script: leanScripts[lean], command, tag: lone.value, lean };
  }
  const batchTag = tag ?? TAG_PREFIX + (++lastTag).toString(36);
  return { script: lockScript, command: encodeBatch(operations, batchTag, announcement, fenceKeyOf, inline, ['EVALSHA', lockScript.sha]), tag: batchTag, lean: undefined };
}

/**
 * A script call's reply as one answer per operation; undefined if it is not the answer to `call`
 * (it belongs to another command). A lean acquire's grant is its value, a lean release's plain
 * delete its count (a misread count only miscounts a release; a grant needs the attempt's own value).
 */
export function decodeCall(reply: unknown, operations: readonly Pick<LockOperation, 'kind'>[], call: Pick<EncodedCall, 'tag' | 'lean'>): OperationReply[] | undefined {
  if (call.lean === 'acquire' && reply === call.tag) return [{ status: ReplyStatus.GRANTED, detail: 0 }];
  if (call.lean === 'release' && typeof reply === 'number') return [{ status: reply, detail: 0 }];
  return decodeBatch(reply, operations, call.tag);
}

/**
 * Split the script's flat reply into one answer per operation; undefined if it is not the answer
 * to the call of these `operations` tagged `tag` (it belongs to another command).
 */
export function decodeBatch(reply: unknown, operations: readonly Pick<LockOperation, 'kind'>[], tag: string): OperationReply[] | undefined {
  const count = operations.length;
  if (!Array.isArray(reply) || reply.length !== count * 2 + 1 || reply[count * 2] !== tag) return undefined;
  const replies: OperationReply[] = new Array<OperationReply>(count);
  for (let i = 0; i < count; i++) {
    const detail: unknown = reply[2 * i + 1];
    const status = Number(reply[2 * i]);
    if (Array.isArray(detail)) replies[i] = { status, detail: 0, snapshot: snapshotOf(detail) };
    else if (typeof detail !== 'string') replies[i] = { status, detail: Number(detail) };
    // A release's text is the ticket now first in line, whatever it deleted ({2, head}: two keys);
    // any other operation's {2, text} is the script refusing it.
    else if (status === ReplyStatus.REFUSED_IN_WORDS && operations[i]!.kind !== 'release') replies[i] = { status, detail: 0, error: detail };
    else replies[i] = { status, detail: 0, head: detail };
  }
  return replies;
}

/** An inspect operation's nested reply ({type, value, pttl, readers, fence, queued, fingerprint}) as a KeySnapshot. */
function snapshotOf(fields: readonly unknown[]): KeySnapshot {
  const [type, value, pttlMs, readers, fence, queued, fingerprint] = fields;
  return {
    type: String(type),
    value: String(value),
    pttlMs: Number(pttlMs),
    readers: Number(readers),
    fence: String(fence),
    queued: Number(queued),
    fingerprint: String(fingerprint),
  };
}
