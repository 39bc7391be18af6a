/**
 * The one Lua script, with its contract, and the encoding of operations into it. Every acquire,
 * extend and release goes through it: alone (a batch of one) or with the others issued in the same
 * event-loop tick. Its SHA1 is computed here so EVALSHA can be sent before SCRIPT LOAD has answered;
 * node.ts falls back to EVAL on NOSCRIPT.
 */
import { createHash, randomBytes } from 'node:crypto';

/**
 * acquire: an exclusive hold (a lock, a write hold); read: a shared hold (readers share, writers
 * wait); permit: one of a semaphore's slots (its keys are the slots: the first free one is taken).
 * inspect and force-release are an operator's (inspect.ts): a read-only snapshot of one key, and a
 * delete of one key whatever holds it. clock reads the master's TIME (master-clock.ts), on the master
 * that serves its key.
 */
export type OperationKind = 'acquire' | 'read' | 'permit' | 'extend' | 'release' | 'fence' | 'inspect' | 'force-release' | 'clock';

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
   * place, but still waits behind the queue). Release: the ticket to take out of the queues.
   */
  readonly ticket?: string;
  /**
   * Acquire with a ticket: its place in line, when the acquire began on the masters' clock (their
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
  /** Permit: the slot (index into `keys`) each master tries first; the others follow in order, wrapping. */
  readonly firstSlot?: number;
  /** With `replicas`: how long the WAIT behind a grant may block (not sent to the script). */
  readonly replicationTimeoutMs?: number;
}

/**
 * Where a resource's fence counter and wait queue live on each master: next to the resource, so ACL
 * key patterns that allow the resource allow them (on a cluster voter, in the resource's slot:
 * cluster.ts). Counters never expire (see docs/safety.md, "Memory and cleaning"); a queue expires with its last
 * ticket. The script names queues itself (the same rule), so they cost no argument.
 */
export const FENCE_SUFFIX = ':redlock-fence';
export const QUEUE_SUFFIX = ':redlock-queue';
/**
 * The member that marks a sorted set as read holds of ours (scored 0, below every deadline): a
 * sorted set without it is someone else's, and no operation reads or writes it as read holds.
 * Not a lock value (those are hex), so never a reader's.
 */
export const READ_HOLDS_MARK = 'redlock-quorum:read-holds';
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

/**
 * One operation's answer: `status` is 1/0 (acquire, read, permit: granted/refused; extend and fence:
 * done/not held), 3 for an acquire or read refused because another waiter's ticket is first in a
 * key's queue (the keys are free, or shared by readers), or, for release, the number of keys (or
 * read holds) deleted; 2 when a fence counter could not be used. `detail` is, for a refused acquire
 * or read, the blocking key's PTTL (−1 = no expiry; for a permit the soonest of its slots'), for a
 * granted fenced acquire, the largest of its keys' fence counters after the increment, and for a
 * granted permit, the slot it took.
 */
export interface OperationReply {
  readonly status: number;
  readonly detail: number;
  /** Status 2: the script refused this operation, in words (a fence counter it could not use, a read without TIME). */
  readonly error?: string;
  /** Release: the ticket now first in line for one of its keys (the script's contract). */
  readonly head?: string;
  /** With `replicas`: a grant that fewer replicas than wanted acknowledged in time (node.ts): no grant. */
  readonly unreplicated?: { readonly acknowledged: number; readonly wanted: number; readonly timeoutMs: number };
  /** Inspect: what the master holds for the key. */
  readonly snapshot?: KeySnapshot;
}

/** One key on one master, as an inspect operation read it (in one script call: a consistent view). */
export interface KeySnapshot {
  /** 'none' (free), 'string' (a lock or a permit), 'read' (read holds), or the key's TYPE ('zset': a sorted set not ours). */
  readonly type: string;
  /** A string key's value: the holder's lock value ('' for other types). */
  readonly value: string;
  /** The key's PTTL: −2 no key, −1 no expiry. */
  readonly pttlMs: number;
  /** A read-hold key's live readers (deadline not passed on the master's clock; every reader without TIME). */
  readonly readers: number;
  /** The fence counter's value as stored ('' for none). */
  readonly fence: string;
  /** Live tickets in the key's wait queue. */
  readonly queued: number;
  /**
   * Who holds the key, as force release compares it: 'free', 'other', or a digest of the lock's
   * value or of the readers' values (it names them without handing them out).
   */
  readonly fingerprint: string;
}

/** The reply status of an acquire refused because another waiter is first in line. */
export const QUEUED = 3;

const kindCode: Record<OperationKind, string> = {
  acquire: 'a',
  read: 's',
  permit: 'p',
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
 * ARGV: per operation four fields: kind ('a' acquire, 'A' fenced acquire, 's' read, 'p' permit,
 *       'e' extend, 'r' release, 'f' fence, 'i' inspect, 'x' force release, 't' clock), lock value
 *       (inspect, force release, clock: the call's own, unique), ttl in ms (fence: the token; force
 *       release: the fingerprint of the holders it may delete, '' for any; release, inspect and
 *       clock: ignored), number of keys it owns in KEYS: its n lock keys (a permit: its semaphore's
 *       slots; inspect, force release: one; clock: the keys whose queues its ticket is placed in, or
 *       one), and for 'A', 'f' and 'i' then their n fence counters. An acquire adds three: its
 *       ticket ('' for none), the age of its acquire (ms) and its place ('' for not known yet; see
 *       Queues); a release adds one, the ticket it drops ('' for none); a clock adds two, a ticket
 *       and its place ('': none); a permit adds one, the slot to try
 *       first (0-based). Then the number of inline keys (0: they are KEYS). Then how releases are announced:
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
 *       is the live one with the lowest place. Queues are not declared keys and every queue command (TIME included)
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
 * Reply: per operation two integers, flattened, then the tag:
 *   acquire {1, 0} no key existed and, on each key's queue, no other ticket was first: every key is
 *           now the value with PX ttl. A ticket in line stays there (the lock's release takes it
 *           out): a grant that makes no quorum must not cost the waiter its place on this master
 *           {0, pttl} a key exists (of any type): nothing written; pttl is the first such key's
 *           remaining ms (−1 = none)
 *           {3, 0} the keys are free but another ticket is ahead in a queue (placed earlier; for a call
           without a ticket, any): nothing written
 *           on {0, _} and {3, _} the ticket (if not '') joins the queue of each key that refused it
 *           (held, or another ticket ahead) or, already there, keeps its place with a new deadline;
 *           and it leaves the queue of each key that did not, announced as a release is: a waiter
 *           never keeps anyone out of a key it is not waiting for here (no hold-and-wait)
 *   read    {1, 0} no key is held exclusively (each is free or a set of readers) and no ticket is
 *           first in a key's queue: the value joins each key's readers until TIME + ttl
 *           {0, pttl} a key is held exclusively (or is of another type, or a sorted set not ours); {3, 0} a waiter is in line
 *           (a writer: no new reader passes it); {2, "TIME refused: …"} the master refuses TIME
 *           (this read alone fails). Readers never join queues
 *   permit  {1, slot} the first free slot (trying from the given one, wrapping) is now the value
 *           with PX ttl; {0, pttl} every slot is held: pttl is the soonest to expire (−1: none will)
 *   fenced acquire: as acquire, but on a grant each fence counter is incremented first (INCR) and
 *           the reply is {1, largest counter}; {2, "fence counter <counter key>: <error>"} if an INCR failed (a
 *           counter that is not an integer, or an ACL without +incr): the lock keys are not written
 *   fence   {1, 0} every lock key holds the value: each counter is now max(counter, token)
 *           {0, 0} one does not (nothing written); {2, "fence counter <counter key>: <error>"} a counter is unusable
 *   extend  {1, 0} every key held the value and now expires in ttl ms (a read hold: its deadline
 *           moves, and the key's with it if it is the last); {0, 0} one did not, nothing changed
 *   release {n, head} n keys held the value and were deleted (compare-and-delete, never a blind
 *           DEL; a read hold leaves its key's readers, and the key is announced only once no
 *           reader is left; a ticket leaving the queue of a key readers share is announced too); the ticket leaves every queue; head is the ticket now first in line for the first
 *           key announced that has one (0: none), so the releasing process wakes it without
 *           waiting for its own subscription. Each deleted key, and each free key whose queue the
 *           ticket left, is announced on the call's channel as "<ticket>:<first ticket or ''>:<key>"
 *           ("<value>:…" for a release without a ticket): the same words from every master, so
 *           the waiter whose turn it is wakes once, at once, instead of polling; best effort (pcall): a refused PUBLISH (an ACL without +publish; a
 *           shard channel resharded away) comes after the DEL and must not turn a done release
 *           into an error
 *   clock   {1, ms} this master's TIME in ms; {2, "TIME refused: …"} an ACL without +time. With a
 *           ticket and a place, the ticket also takes that place in each key's queue it is in
 *   inspect {1, {type, value, pttl, readers, fence, queued, fingerprint}} reads one key and writes
 *           nothing: 'none', 'string', 'read' (read holds) or its TYPE (a sorted set not ours:
 *           'zset'), a string's value ('' otherwise), its PTTL, a read-hold key's live readers, its
 *           fence counter as stored ('' for none), the live tickets in its queue (readers and tickets
 *           counted by their deadlines on TIME; all of them without it) and its fingerprint, the
 *           holders as force release compares them: 'free', 'other', or the SHA1 of "lock:<value>" or of
 *           "read:<every reader's value, sorted, comma separated>"; {2, error} a command was refused
 *           (this operation alone fails)
 *   force release {n, head} an operator's: the key, a string or read holds, is deleted (n = 1; 0:
 *           there was no key) if its fingerprint is the one given (or any, for '') and announced as a
 *           release is, "<the call's value>:<first ticket or ''>:<key>", so waiters wake; its fence
 *           counter and its queue stay. {2, "changed: …"} another fingerprint (other holders), left alone;
 *           {2, "not a lock: …"} a key of another type (or a sorted set not ours), left alone
 * With inline keys, an operation a key of which this master does not serve now (a slot of another
 * master, or one being migrated away without the key: EXISTS fails there) answers {−1, 0} and
 * writes nothing; the caller sends it again alone, with declared keys, to be redirected.
 * Operations run in order, so a batch behaves exactly like the same calls sent one by one, and one
 * operation's refusal never affects another's. A key of another type is "not ours" (GET's WRONGTYPE
 * is caught) instead of failing the batch; any other refusal of GET (an ACL without +get) fails the
 * script, as a refused command does, rather than passing for "not held".
 */
const source = `local n = #ARGV
local inline = tonumber(ARGV[n - 3])
local K = KEYS
if inline > 0 then
  K = {}
  for i = 1, inline do K[i] = ARGV[i] end
end
local shard = ARGV[n - 2] == 'SPUBLISH'
local function queue_of(key)
  if shard then
    local open = string.find(key, '{', 1, true)
    local close = open and string.find(key, '}', open + 1, true)
    if not close or close == open + 1 then return '{' .. key .. '}:redlock-queue' end
  end
  return key .. ':redlock-queue'
end
local lines
local function line()
  if lines then return lines end
  local now
  local function queue(...)
    local result = redis.pcall(...)
    if type(result) == 'table' and result.err then return nil end
    return result
  end
  local function clock()
    if now == nil then
      local t = queue('TIME')
      now = t and tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) or false
    end
    return now
  end
  lines = {
    -- Read holds, every rule of them (see the contract): a set of readers carries the mark, scored 0,
    -- below every deadline, so it is never a reader, never lapses and never sets the expiry. A sorted
    -- set without it is not ours: nothing here reads or writes it.
    shared = function(key)
      return tonumber(queue('ZSCORE', key, '${READ_HOLDS_MARK}')) == 0
    end,
    -- What a key is: 'none', 'string' (a lock or a permit), 'read' (read holds), else its type ('zset'
    -- for a sorted set not ours). call: redis.call, or an inspection's pcall (nil when refused).
    kind = function(key, call)
      local held = call('TYPE', key)
      held = held and held.ok or 'none'
      if held == 'zset' and lines.shared(key) then return 'read' end
      return held
    end,
    -- Lapsed readers leave (known only with TIME), and the key expires with its last one: deleted
    -- when only the mark is left.
    settle = function(key)
      local at = clock()
      if at then redis.call('ZREMRANGEBYSCORE', key, '(0', at) end
      local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      if last and last > 0 then redis.call('PEXPIREAT', key, last) elseif last then redis.call('DEL', key) end
    end,
    -- The deadline of a live read hold with this value (none: not a set of readers, or no TIME).
    reader = function(key, value)
      local deadline, at = lines.shared(key) and tonumber(queue('ZSCORE', key, value)), clock()
      if deadline and at and deadline > at then return deadline end
    end,
    -- A read hold joins (or, already there, moves) its deadline; the key must be free or a set of readers.
    hold = function(key, value, deadline)
      redis.call('ZADD', key, 0, '${READ_HOLDS_MARK}', deadline, value)
      lines.settle(key)
    end,
    -- A read hold leaves; true when that left the key free.
    leave = function(key, value)
      if lines.shared(key) and redis.call('ZREM', key, value) == 1 then
        lines.settle(key)
        return redis.call('EXISTS', key) == 0
      end
    end,
    -- Live readers (deadline after TIME; every reader without it), or nil when call refused.
    readers = function(key, call)
      local at = clock()
      local live = call('ZRANGEBYSCORE', key, '(' .. (at or 0), '+inf')
      return live and #live
    end,
    -- A key's holders as an operator sees them, for force release to compare: 'free', a digest of a
    -- lock's value or of a set's readers (every member, lapsed ones too: only a write changes them),
    -- 'other'; nil when call refused. A digest names holders without handing out their values.
    fingerprint = function(key, held, call)
      if held == 'none' then return 'free' end
      if held == 'string' then
        local value = call('GET', key)
        return value and redis.sha1hex('lock:' .. value)
      end
      if held ~= 'read' then return 'other' end
      local members = call('ZRANGE', key, 0, -1)
      if not members then return nil end
      local values = {}
      for _, member in ipairs(members) do
        if member ~= '${READ_HOLDS_MARK}' then values[#values + 1] = member end
      end
      table.sort(values)
      return redis.sha1hex('read:' .. table.concat(values, ','))
    end,
    -- This master's clock in ms, or false when TIME is refused (an ACL without +time).
    clock = clock,
    first = function(q)
      local at = clock()
      if at then
        for _, mark in ipairs(queue('ZRANGEBYSCORE', q, -at, '(0') or {}) do queue('ZREM', q, mark, string.sub(mark, 2)) end
      end
      local head = queue('ZRANGEBYSCORE', q, '(0', '+inf', 'LIMIT', 0, 1)
      return head and head[1]
    end,
    -- The ticket's place: the one its acquire gives (the same on every master), or until it gives
    -- one, this master's own estimate of when the acquire began (TIME minus its age), kept (NX).
    join = function(q, ticket, age, place)
      local at = clock()
      local ttl = tonumber(string.match(ticket, '^(%d+)%-'))
      if not (at and ttl) then return end
      local placed = place and queue('ZADD', q, place, ticket) or queue('ZADD', q, 'NX', at - age, ticket)
      if placed and queue('ZADD', q, -(at + ttl), '~' .. ticket) then
        local pttl = queue('PTTL', q)
        if pttl and pttl < ttl then queue('PEXPIRE', q, ttl) end
      end
    end,
    -- Is another ticket ahead of this one in the line: a live one placed earlier (on a tie, the lower
    -- ticket, as the set sorts)? This one's place is the acquire's, else where it stands, else this
    -- master's estimate (TIME minus its age). Without a ticket, anyone in line is ahead. A ticket
    -- coming back to a line it left goes by its place, not behind whoever heads the line meanwhile.
    ahead = function(q, ticket, age, place)
      local head = lines.first(q)
      if not head or head == ticket then return false end
      if ticket == '' then return true end
      local mine = place or tonumber(queue('ZSCORE', q, ticket))
      if not mine then
        local at = clock()
        if not at then return true end
        mine = at - age
      end
      local theirs = tonumber(queue('ZSCORE', q, head))
      return not theirs or theirs < mine or (theirs == mine and head < ticket)
    end,
    drop = function(q, ticket)
      return (queue('ZREM', q, ticket, '~' .. ticket) or 0) > 0
    end,
  }
  return lines
end
-- A release's announcement, "<who>:<first ticket in line, or ''>:<key>": the waiter whose turn it
-- is wakes at once. Answers that first ticket. Best effort (pcall): a refused PUBLISH comes after
-- the delete and must not turn a done release into an error.
local function announce(key, q, who)
  local head = q and line().first(q)
  redis.pcall(ARGV[n - 2], ARGV[n - 1], who .. ':' .. (head or '') .. ':' .. key)
  return head
end
local reply = {}
local first = 1
local i = inline + 1
while i <= n - 4 do
  local kind, value, ttl = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local last = first + tonumber(ARGV[i + 3]) - 1
  local status, detail = 1, 0
  local width = 4
  if inline > 0 then
    for k = first, last do
      if type(redis.pcall('EXISTS', K[k])) == 'table' then
        status = -1
        break
      end
    end
  end
  local locks = (kind == 'A' or kind == 'f') and (first + last - 1) / 2 or last
  if kind == 'a' or kind == 'A' then width = 7 elseif kind == 't' then width = 6 elseif kind == 'r' or kind == 'p' then width = 5 end
  if status == -1 then
    detail = 0
  elseif kind == 's' then
    for k = first, last do
      local held = line().kind(K[k], redis.call)
      if held ~= 'none' and held ~= 'read' then
        status, detail = 0, redis.call('PTTL', K[k])
        break
      end
      local q = queue_of(K[k])
      if status == 1 and redis.pcall('EXISTS', q) == 1 and line().first(q) then status = 3 end
    end
    local at = status == 1 and line().clock()
    if status == 1 and not at then
      -- No clock, no deadline: this read alone fails (the batch's other operations go on).
      status, detail = 2, 'TIME refused: read holds need TIME on the master'
    elseif status == 1 then
      for k = first, last do line().hold(K[k], value, at + tonumber(ttl)) end
    end
  elseif kind == 'p' then
    local slots = last - first + 1
    local from = tonumber(ARGV[i + 4])
    status, detail = 0, -1
    for j = 0, slots - 1 do
      local slot = (from + j) % slots
      local pttl = redis.call('PTTL', K[first + slot])
      if pttl == -2 then
        redis.call('SET', K[first + slot], value, 'PX', ttl)
        status, detail = 1, slot
        break
      elseif pttl >= 0 and (detail < 0 or pttl < detail) then
        detail = pttl -- the soonest a slot frees
      end
    end
  elseif kind == 'a' or kind == 'A' then
    local ticket, age, place = ARGV[i + 4], tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
    -- Per key: held, or another ticket ahead in its line (placed earlier). Without a ticket the first such
    -- key decides; with one, every key is looked at: the ticket waits in the lines of those alone.
    -- (Made on the first refusal: an uncontended acquire allocates nothing for it.)
    local blocked
    for k = first, locks do
      -- One EXISTS for the key and its queue: an uncontended acquire pays nothing for queues.
      local q = queue_of(K[k])
      local found = redis.pcall('EXISTS', K[k], q)
      if type(found) ~= 'number' then found, q = redis.call('EXISTS', K[k]), false end
      if found == 2 or (found == 1 and (not q or redis.call('EXISTS', K[k]) == 1)) then
        if status ~= 0 then status, detail = 0, redis.call('PTTL', K[k]) end
        blocked = blocked or {}
        blocked[k] = true
      elseif found == 1 and line().ahead(q, ticket, age, place) then
        if status == 1 then status = 3 end
        blocked = blocked or {}
        blocked[k] = true
      end
      if status ~= 1 and ticket == '' then break end
    end
    if status ~= 1 and ticket ~= '' then
      -- No hold-and-wait: the ticket stands in the lines of the keys that refused it, and leaves
      -- those of the keys it could have had here (announcing it: free, they may go to the next).
      for k = first, locks do
        local q = queue_of(K[k])
        if blocked[k] then line().join(q, ticket, age, place)
        elseif line().drop(q, ticket) then announce(K[k], q, ticket) end
      end
    end
    if status == 1 then
      for k = locks + 1, last do
        local counter = redis.pcall('INCR', K[k])
        if type(counter) ~= 'number' then
          status, detail = 2, 'fence counter ' .. K[k] .. ': ' .. tostring(counter.err)
          break
        end
        if counter > detail then detail = counter end
      end
    end
    if status == 1 then
      for k = first, locks do redis.call('SET', K[k], value, 'PX', ttl) end
    end
  elseif kind == 'r' then
    local ticket = ARGV[i + 4]
    status = 0
    for k = first, last do
      local q = queue_of(K[k])
      if redis.pcall('EXISTS', q) ~= 1 then q = false end
      local left = q and ticket ~= '' and line().drop(q, ticket)
      local current = redis.pcall('GET', K[k])
      local who
      if type(current) == 'table' then
        if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
        -- A read hold leaves the key's readers; the key is free, and announced, once none is left.
        if line().reader(K[k], value) then status = status + 1 end
        if line().leave(K[k], value) then who = value end
      elseif current == value then
        status = status + redis.call('DEL', K[k])
        who = ticket ~= '' and ticket or value
      end
      -- The ticket left the queue of a key nobody holds alone (free, or shared by readers): whoever
      -- it held back may go.
      if not who and left and type(current) ~= 'string' then who = ticket end
      if who then
        local head = announce(K[k], q, who)
        if head and detail == 0 then detail = head end
      end
    end
  elseif kind == 't' then
    status, detail = 1, line().clock()
    if not detail then status, detail = 2, 'TIME refused: ordering the line needs TIME on the master' end
    -- With a ticket and its place: the ticket takes that place where it stands in line (XX).
    local ticket, place = ARGV[i + 4], tonumber(ARGV[i + 5])
    if ticket ~= '' and place then
      for k = first, last do redis.pcall('ZADD', queue_of(K[k]), 'XX', place, ticket) end
    end
  elseif kind == 'i' then
    -- Reads only, each a pcall: a refused command fails this inspection alone, never the batch.
    local key, refused = K[first], nil
    local function read(...)
      local result = redis.pcall(...)
      if type(result) == 'table' and result.err then
        refused = refused or result.err
        return nil
      end
      return result
    end
    local held = line().kind(key, read)
    local now = line().clock()
    local holder, readers = '', 0
    if held == 'string' then holder = read('GET', key) or '' end
    if held == 'read' then readers = line().readers(key, read) or 0 end
    local fingerprint = line().fingerprint(key, held, read)
    local fence = read('GET', K[last])
    -- The queue as every queue read: one the master cannot serve now is no queue (see Queues).
    local queued = redis.pcall('ZRANGEBYSCORE', queue_of(key), now and '-inf' or '(0', now and '(' .. -now or '+inf')
    local pttl = read('PTTL', key)
    if refused then
      status, detail = 2, tostring(refused)
    else
      detail = {held, holder, pttl, readers, fence or '', type(queued) == 'table' and not queued.err and #queued or 0, fingerprint}
    end
  elseif kind == 'x' then
    -- An operator's, whatever holds the key: its fence counter (tokens must stay monotonic) and its
    -- queue (its waiters are alive) stay.
    local key = K[first]
    local held = line().kind(key, redis.call)
    status = 0
    if (held == 'string' or held == 'read') and ttl ~= '' and ttl ~= line().fingerprint(key, held, redis.call) then
      -- Not the holders the operator was shown: theirs is a live lock, perhaps.
      status, detail = 2, 'changed: not the holders inspected, left alone'
    elseif held == 'string' or held == 'read' then
      status = redis.call('DEL', key)
      local q = queue_of(key)
      if redis.pcall('EXISTS', q) ~= 1 then q = false end
      detail = announce(key, q, value) or 0
    elseif held ~= 'none' then
      status, detail = 2, 'not a lock: a key of type ' .. held .. ', left alone'
    end
  else
    local shared
    for k = first, locks do
      local current = redis.pcall('GET', K[k])
      if type(current) == 'table' then
        if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
        -- A live read hold can be extended (fenced it never is).
        if kind ~= 'e' or not line().reader(K[k], value) then
          status = 0
          break
        end
        shared = shared or {}
        shared[k] = true
      elseif current ~= value then
        status = 0
        break
      end
    end
    if status == 1 and kind == 'e' then
      for k = first, last do
        if shared and shared[k] then
          line().hold(K[k], value, line().clock() + tonumber(ttl))
        else
          redis.call('PEXPIRE', K[k], ttl)
        end
      end
    elseif status == 1 then
      local token = tonumber(ttl)
      for k = locks + 1, last do
        local raw = redis.pcall('GET', K[k])
        local counter = type(raw) ~= 'table' and tonumber(raw or 0)
        if not counter then
          status, detail = 2, 'fence counter ' .. K[k] .. ': ' .. (type(raw) == 'table' and tostring(raw.err) or 'ERR value is not an integer')
          break
        end
        if counter < token then redis.call('SET', K[k], ttl) end
      end
    end
  end
  reply[#reply + 1] = status
  reply[#reply + 1] = detail
  first = last + 1
  i = i + width
end
reply[#reply + 1] = ARGV[n]
return reply`;

/** Where the script announces released keys; messages are `<value>:<key>`. */
export const releasedChannel = 'redlock-quorum:released';

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

export const lockScript = { source, sha: createHash('sha1').update(source).digest('hex') } as const;

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
    return [head[0]!, head[1]!, '1', lone.keys[0]!, 'a', lone.value, ttl, '1', lone.ticket ?? '', ...placeOf(lone), '0', command, channel, tag];
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
    args.push(fenced ? 'A' : kindCode[kind], value, String(number), String(counters ? 2 * own.length : own.length));
    if (kind === 'acquire') args.push(operation.ticket ?? '', ...placeOf(operation));
    else if (kind === 'release') args.push(operation.ticket ?? '');
    else if (kind === 'clock') args.push(operation.ticket ?? '', placeOf(operation)[1]);
    else if (kind === 'permit') args.push(String(operation.firstSlot ?? 0));
  }
  if (inline) return [...head, '0', ...keys, ...args, String(keys.length), command, channel, tag];
  return [...head, String(keys.length), ...keys, ...args, '0', command, channel, tag];
}

/** An acquire's age and place ('' unknown), as the script reads them (µs precision is plenty). */
function placeOf(operation: LockOperation): [string, string] {
  const { ageMs = 0, placeMs } = operation;
  return [String(Math.round(ageMs * 1000) / 1000), placeMs === undefined ? '' : String(Math.round(placeMs * 1000) / 1000)];
}

/**
 * Split the script's flat reply into one answer per operation; undefined if it is not the answer
 * to the call of `count` operations tagged `tag` (it belongs to another command).
 */
export function decodeBatch(reply: unknown, count: number, tag: string): OperationReply[] | undefined {
  if (!Array.isArray(reply) || reply.length !== count * 2 + 1 || reply[count * 2] !== tag) return undefined;
  const replies: OperationReply[] = new Array<OperationReply>(count);
  for (let i = 0; i < count; i++) {
    const detail: unknown = reply[2 * i + 1];
    const status = Number(reply[2 * i]);
    if (typeof detail !== 'string') {
      replies[i] = Array.isArray(detail) ? { status, detail: 0, snapshot: snapshotOf(detail) } : { status, detail: Number(detail) };
    } else replies[i] = status === 2 ? { status, detail: 0, error: detail } : { status, detail: 0, head: detail };
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
