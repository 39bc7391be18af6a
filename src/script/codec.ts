/**
 * The one Lua script, with its contract, and the encoding of operations into it. Every acquire,
 * extend and release goes through it: alone (a batch of one) or with the others issued in the same
 * event-loop tick. Its SHA1 is computed here so EVALSHA can be sent before SCRIPT LOAD has answered;
 * voters/master/script-call.ts falls back to EVAL on NOSCRIPT.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ReplyStatus, type KeySnapshot, type OperationReply } from './replies.js';
import { lean } from './lean.generated.js';
import { source } from './lua.generated.js';
import { RELEASED_CHANNEL } from './marks.js';

/**
 * acquire: an exclusive hold (a lock, a write hold); admit: a primitive's own admission rule (a
 * read hold, a semaphore's permit: `admit` says which). inspect and force-release are an
 * operator's (operator/inspect.ts, operator/force-release.ts): a read-only snapshot of one
 * key, and a delete of one key whatever holds it. clock reads the master's TIME (acquisition/master-clock.ts), on the master
 * that serves its key.
 */
export type OperationKind = 'acquire' | 'admit' | 'extend' | 'release' | 'fence' | 'inspect' | 'force-release' | 'clock';

/**
 * A primitive's admission rule as the script runs it (primitives/: the rule in its .ts, the
 * operation in its .lua): the operation's code, the letter its file's `--! operation` header
 * declares, and the fields that operation reads after the four every operation has.
 */
export interface AdmitRule {
  readonly code: string;
  /**
   * Its grants name a group in their detail (a semaphore's slot): only grants of one group count
   * together (protocol/fan-out.ts, Tally), and a refused attempt's next one starts from the
   * highest group a master gave.
   */
  readonly grouped: boolean;
  /**
   * The fields after the common four and the ticket, from the operation: its `from` (the group an
   * attempt tries first, grouped rules), its age and place in line (`placeFields`, a rule in line).
   */
  fields(operation: LockOperation): readonly string[];
}

/** Whether an operation may write a grant (so `replicas` waits for it and the restart guard holds it back). */
export function grants(kind: OperationKind): boolean {
  return kind !== 'release' && kind !== 'inspect' && kind !== 'force-release' && kind !== 'clock';
}

/** One lock's operation on one master. */
export interface LockOperation {
  readonly kind: OperationKind;
  readonly keys: readonly string[];
  readonly value: string;
  /** For acquire and extend: the ttl to set, ms. Ignored by release and fence. */
  readonly ttlMs: number;
  /** Acquire: also increment each key's fence counter and answer the largest. */
  readonly fenced?: boolean;
  /** Fence: the token to raise each key's fence counter to. */
  readonly token?: number;
  /**
   * Acquire: the caller's place in each key's wait queue (`newTicket`; '' or absent: it keeps no
   * place, but still waits behind the queue). Admit: the waiter's ticket, for the mark a refused
   * reader or racing permit leaves on the keys' queues so their releases are announced, or a fair
   * permit's place in the semaphore's line ('' or absent: none). Release: the ticket (or mark) to
   * take out of the queues.
   */
  readonly ticket?: string;
  /**
   * Acquire (or a fair permit) with a ticket: its place in line, when the acquire began on the masters' clock (their
   * median, as this process reads it: master-clock.ts), the same on every master. Unknown before
   * this process has read the masters' clocks: each master then places it itself, at its own TIME
   * minus `ageMs` (ms since the acquire began, on the client's monotonic clock), until a place is
   * given. Either way no client's wall clock orders the line.
   */
  readonly placeMs?: number;
  readonly ageMs?: number;
  /**
   * Force release: delete the key only if its holders are still these (`KeySnapshot.fingerprint`, as
   * inspected on this master); absent or '': whatever holds it.
   */
  readonly expected?: string;
  /** Admit: the primitive's rule (its script operation). */
  readonly admit?: AdmitRule;
  /** Admit with a grouped rule: the group (a permit's slot, an index into `keys`) each master tries first. */
  readonly from?: number;
  /** With `replicas`: how long the WAIT behind a grant may block (not sent to the script). */
  readonly replicationTimeoutMs?: number;
}

/**
 * Where a resource's fence counter and wait queue live on each master: next to the resource, so ACL
 * key patterns that allow the resource allow them (on a cluster voter, in the resource's slot:
 * voters/cluster/slots.ts). Counters never expire (see docs/safety.md, "Memory and cleaning"); a queue expires with its last
 * ticket. The script names queues itself (the same rule), so they cost no argument.
 */
export const FENCE_SUFFIX = ':redlock-fence';
export const QUEUE_SUFFIX = ':redlock-queue';
export { READ_HOLDS_MARK } from './marks.js';
/** Where a resource's fence counter lives on a master (standalone: beside it). */
export type FenceKey = (resource: string) => string;
export const fenceKey: FenceKey = (resource) => resource + FENCE_SUFFIX;

/**
 * A ticket, "<ttl>-<id>": how long a master keeps it without a new attempt (ms, on the master's
 * clock), and an id unique across processes (a random prefix drawn once, then a counter: a ticket
 * names a waiter, it guards nothing, so it needs no CSPRNG draw of its own). It says nothing of when
 * its waiter came: each master places it by its own clock, from the age each attempt carries (see
 * the script's Queues), so a client whose wall clock is off neither jumps the line nor starves.
 */
export function newTicket(ttlMs: number): string {
  return `${Math.ceil(ttlMs)}-${TICKET_PREFIX}${(++lastTicket).toString(36)}`;
}
const TICKET_PREFIX = randomBytes(8).toString('hex');
let lastTicket = 0;

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
 * ARGV: per operation four fields: kind ('a' acquire, 'A' fenced acquire, a primitive's code: 's' read, 'p' permit,
 *       'e' extend, 'r' release, 'f' fence, 'i' inspect, 'x' force release, 't' clock), lock value
 *       (inspect, force release, clock: the call's own, unique), ttl in ms (fence: the token; force
 *       release: the fingerprint of the holders it may delete, '' for any; release, inspect and
 *       clock: ignored), number of keys it owns in KEYS: its n lock keys (a permit: its semaphore's
 *       slots; inspect, force release: one; clock: the keys whose queues its ticket is placed in, or
 *       one), and for 'A', 'f' and 'i' then their n fence counters. An acquire adds three: its
 *       ticket ('' for none), the age of its acquire (ms) and its place ('' for not known yet; see
 *       Queues); a release adds one, the ticket it drops ('' for none); a clock adds two, a ticket
 *       and its place ('': none); a primitive's operation adds its ticket ('' for none: the mark a
 *       refused one leaves on the queues, see Queues; a fair permit: its place in line) and then the
 *       fields its file declares (a permit: the slot to try first, 0-based, its acquire's age and
 *       place as an acquire's, and '1' for the fair rule). Then the number of inline keys (0: they are KEYS). Then how releases are announced:
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
 * of a free key), the first ticket in the key's queue now (undefined: none), and the key.
 */
export function parseReleased(message: string): { value: string; head: string | undefined; key: string } | undefined {
  const colon = message.indexOf(':');
  const second = colon < 0 ? -1 : message.indexOf(':', colon + 1);
  if (second < 0) return undefined;
  const head = message.slice(colon + 1, second);
  return { value: message.slice(0, colon), head: head === '' ? undefined : head, key: message.slice(second + 1) };
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
 * loop and dispatch. KEYS: the operation's keys. ARGV: its value, then an acquire's ttl, ticket, age
 * and place, or a release's ticket, then the tag; releases are announced on releasedChannel. The
 * reply is a batch of one's.
 */
export const leanScripts = { acquire: luaScript(lean.acquire), release: luaScript(lean.release) } as const;
/** Every script, as a master is given them when a connection opens (SCRIPT LOAD). */
export const allScripts: readonly LuaScript[] = [lockScript, leanScripts.acquire, leanScripts.release];

/** A script call as it goes out: the script, and its EVALSHA command. */
export interface EncodedCall {
  readonly script: LuaScript;
  readonly command: string[];
}

/** Where a master announces releases: PUBLISH on the shared channel, or SPUBLISH on a cluster shard's own channel. */
export interface Announcement {
  readonly command: 'PUBLISH' | 'SPUBLISH';
  readonly channel: string;
}
export const standaloneAnnouncement: Announcement = { command: 'PUBLISH', channel: releasedChannel };

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
  const lone = operations.length === 1 ? operations[0]! : undefined;
  const { command, channel } = announcement;
  const plain = lone && (lone.kind === 'acquire' || lone.kind === 'release' || lone.kind === 'extend');
  if (lone && plain && !lone.fenced && !inline && lone.keys.length === 1 && head.length === 2) {
    // One plain operation on one key, the usual call: built in one go (this runs per master per operation).
    const ttl = String(lone.ttlMs);
    if (lone.kind === 'extend') return [head[0]!, head[1]!, '1', lone.keys[0]!, 'e', lone.value, ttl, '1', '0', command, channel, tag];
    if (lone.kind === 'release') return [head[0]!, head[1]!, '1', lone.keys[0]!, 'r', lone.value, ttl, '1', lone.ticket ?? '', '0', command, channel, tag];
    return [head[0]!, head[1]!, '1', lone.keys[0]!, 'a', lone.value, ttl, '1', lone.ticket ?? '', ...placeFields(lone), '0', command, channel, tag];
  }
  const keys: string[] = [];
  const args: string[] = [];
  for (const operation of operations) {
    const { kind, keys: own, value, fenced } = operation;
    keys.push(...own);
    // A fenced acquire, a fence and an inspection also own the resources' fence counters, after the lock keys.
    const counters = fenced || kind === 'fence' || kind === 'inspect';
    if (counters) for (const key of own) keys.push(fenceKeyOf(key));
    const number = kind === 'fence' ? operation.token : kind === 'force-release' ? (operation.expected ?? '') : operation.ttlMs;
    const code = kind === 'admit' ? operation.admit!.code : fenced ? 'A' : kindCode[kind];
    args.push(code, value, String(number), String(counters ? 2 * own.length : own.length));
    if (kind === 'acquire') args.push(operation.ticket ?? '', ...placeFields(operation));
    else if (kind === 'release') args.push(operation.ticket ?? '');
    else if (kind === 'clock') args.push(operation.ticket ?? '', placeFields(operation)[1]);
    else if (kind === 'admit') args.push(operation.ticket ?? '', ...operation.admit!.fields(operation));
  }
  if (inline) return [...head, '0', ...keys, ...args, String(keys.length), command, channel, tag];
  return [...head, String(keys.length), ...keys, ...args, '0', command, channel, tag];
}

/**
 * The EVALSHA command for a batch of `operations`: a lone plain acquire or release on a standalone
 * master as its lean script, everything else as the batch script (encodeBatch).
 */
export function encodeCall(
  operations: readonly LockOperation[],
  tag: string,
  announcement: Announcement = standaloneAnnouncement,
  fenceKeyOf: FenceKey = fenceKey,
  inline = false,
): EncodedCall {
  const lone = operations.length === 1 ? operations[0]! : undefined;
  const standalone = announcement.command === 'PUBLISH' && announcement.channel === releasedChannel;
  if (lone && standalone && !inline && !lone.fenced && (lone.kind === 'acquire' || lone.kind === 'release')) {
    const { keys, value, ticket = '' } = lone;
    const script = leanScripts[lone.kind];
    const fields = lone.kind === 'acquire' ? [value, String(lone.ttlMs), ticket, ...placeFields(lone), tag] : [value, ticket, tag];
    const command = keys.length === 1 ? ['EVALSHA', script.sha, '1', keys[0]!, ...fields] : ['EVALSHA', script.sha, String(keys.length), ...keys, ...fields];
    return { script, command };
  }
  return { script: lockScript, command: encodeBatch(operations, tag, announcement, fenceKeyOf, inline, ['EVALSHA', lockScript.sha]) };
}

/** An acquire's (or a fair permit's) age and place ('' unknown), as the script reads them (µs precision is plenty). */
export function placeFields(operation: Pick<LockOperation, 'ageMs' | 'placeMs'>): [string, string] {
  const { ageMs = 0, placeMs } = operation;
  return [String(Math.round(ageMs * 1000) / 1000), placeMs === undefined ? '' : String(Math.round(placeMs * 1000) / 1000)];
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
