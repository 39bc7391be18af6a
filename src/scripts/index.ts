/**
 * The one Lua script, with its contract, and the encoding of operations into it. Every acquire,
 * extend and release goes through it: alone (a batch of one) or with the others issued in the same
 * event-loop tick. Its SHA1 is computed here so EVALSHA can be sent before SCRIPT LOAD has answered;
 * node.ts falls back to EVAL on NOSCRIPT.
 */
import { createHash } from 'node:crypto';

export type OperationKind = 'acquire' | 'extend' | 'release' | 'fence';

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
  /** With `replicas`: how long the WAIT behind a grant may block (not sent to the script). */
  readonly replicationTimeoutMs?: number;
}

/**
 * Where a resource's fence counter lives on each master: next to the resource, so ACL key patterns
 * that allow the resource allow its counter. Counters never expire (see the README on cleaning).
 */
export const FENCE_SUFFIX = ':redlock-fence';
export const fenceKey = (resource: string): string => resource + FENCE_SUFFIX;

/**
 * One operation's answer: `status` is 1/0 (acquire: granted/refused; extend and fence: done/not
 * held) or, for release, the number of keys deleted, or 2 when a fence counter could not be used;
 * `detail` is, for a refused acquire, the blocking key's PTTL (−1 = no expiry), and for a granted
 * fenced acquire, the largest of its keys' fence counters after the increment.
 */
export interface OperationReply {
  readonly status: number;
  readonly detail: number;
  /** Status 2 (fenced operations): which fence counter failed, and Redis' error. */
  readonly error?: string;
  /** With `replicas`: a grant that fewer replicas than wanted acknowledged in time (node.ts): no grant. */
  readonly unreplicated?: { readonly acknowledged: number; readonly wanted: number; readonly timeoutMs: number };
}

const kindCode: Record<OperationKind, string> = { acquire: 'a', extend: 'e', release: 'r', fence: 'f' };

/**
 * locks — run a sequence of lock operations, in order, atomically.
 * KEYS: the keys of every operation, concatenated in order; or none, with the keys at the start of
 *       ARGV instead ("inline": a batch on a cluster master whose keys are in several of its slots,
 *       which declared keys may not be).
 * ARGV: per operation four fields: kind ('a' acquire, 'A' fenced acquire, 'e' extend, 'r' release,
 *       'f' fence), lock value, ttl in ms (fence: the token; release: ignored), number of keys it
 *       owns in KEYS. 'A' and 'f' own 2n keys: n lock keys, then their n fence counters. Then the
 *       number of inline keys (0: they are KEYS). Then how
 *       releases are announced: 'PUBLISH' and the channel (a standalone master), or 'SPUBLISH' and
 *       a shard channel of the master's own (a cluster shard). Last, the
 *       call's tag (unique in the process), echoed as the reply's last element: a reply read for
 *       the wrong call (a connection whose replies no longer line up with its commands, as after
 *       bytes lost by a middlebox) is recognised instead of counted as that call's votes.
 * Reply: per operation two integers, flattened, then the tag:
 *   acquire {1, 0} no key existed, every key is now the value with PX ttl
 *           {0, pttl} a key exists (of any type): nothing written; pttl is its remaining ms (−1 = none)
 *   fenced acquire: as acquire, but on a grant each fence counter is incremented first (INCR) and
 *           the reply is {1, largest counter}; {2, "<counter key>: <error>"} if an INCR failed (a
 *           counter that is not an integer, or an ACL without +incr): the lock keys are not written
 *   fence   {1, 0} every lock key holds the value: each counter is now max(counter, token)
 *           {0, 0} one does not (nothing written); {2, "<counter key>: <error>"} a counter is unusable
 *   extend  {1, 0} every key held the value and now expires in ttl ms; {0, 0} one did not, nothing changed
 *   release {n, 0} n keys held the value and were deleted (compare-and-delete, never a blind DEL);
 *           each deleted key is announced on the call's channel as "<value>:<key>", so waiters
 *           wake at once instead of polling; best effort (pcall): a refused PUBLISH (an ACL without
 *           +publish; a shard channel resharded away) comes after the DEL and must not turn a done
 *           release into an error
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
local reply = {}
local first = 1
for i = inline + 1, n - 4, 4 do
  local kind, value, ttl = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local last = first + tonumber(ARGV[i + 3]) - 1
  local status, detail = 1, 0
  if inline > 0 then
    for k = first, last do
      if type(redis.pcall('EXISTS', K[k])) == 'table' then
        status = -1
        break
      end
    end
  end
  if status == -1 then
    detail = 0
  elseif kind == 'a' or kind == 'A' then
    local locks = kind == 'a' and last or (first + last - 1) / 2
    for k = first, locks do
      if redis.call('EXISTS', K[k]) == 1 then
        status, detail = 0, redis.call('PTTL', K[k])
        break
      end
    end
    if status == 1 then
      for k = locks + 1, last do
        local counter = redis.pcall('INCR', K[k])
        if type(counter) ~= 'number' then
          status, detail = 2, K[k] .. ': ' .. tostring(counter.err)
          break
        end
        if counter > detail then detail = counter end
      end
    end
    if status == 1 then
      for k = first, locks do redis.call('SET', K[k], value, 'PX', ttl) end
    end
  elseif kind == 'r' then
    status = 0
    for k = first, last do
      local current = redis.pcall('GET', K[k])
      if type(current) == 'table' then
        if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
      elseif current == value then
        status = status + redis.call('DEL', K[k])
        redis.pcall(ARGV[n - 2], ARGV[n - 1], value .. ':' .. K[k])
      end
    end
  else
    local locks = kind == 'f' and (first + last - 1) / 2 or last
    for k = first, locks do
      local current = redis.pcall('GET', K[k])
      if type(current) == 'table' then
        if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
        status = 0
        break
      elseif current ~= value then
        status = 0
        break
      end
    end
    if status == 1 and kind == 'e' then
      for k = first, last do redis.call('PEXPIRE', K[k], ttl) end
    elseif status == 1 then
      local token = tonumber(ttl)
      for k = locks + 1, last do
        local raw = redis.pcall('GET', K[k])
        local counter = type(raw) ~= 'table' and tonumber(raw or 0)
        if not counter then
          status, detail = 2, K[k] .. ': ' .. (type(raw) == 'table' and tostring(raw.err) or 'ERR value is not an integer')
          break
        end
        if counter < token then redis.call('SET', K[k], ttl) end
      end
    end
  end
  reply[#reply + 1] = status
  reply[#reply + 1] = detail
  first = last + 1
end
reply[#reply + 1] = ARGV[n]
return reply`;

/** Where the script announces released keys; messages are `<value>:<key>`. */
export const releasedChannel = 'redlock-quorum:released';

/** Split a release announcement into the released lock's value and the key. */
export function parseReleased(message: string): { value: string; key: string } | undefined {
  const colon = message.indexOf(':');
  return colon < 0 ? undefined : { value: message.slice(0, colon), key: message.slice(colon + 1) };
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
 * lead ARGV (see the script).
 */
export function encodeBatch(
  operations: readonly LockOperation[],
  tag: string,
  announcement: Announcement = standaloneAnnouncement,
  fenceKeyOf: (resource: string) => string = fenceKey,
  inline = false,
  head: readonly string[] = [],
): string[] {
  const lone = operations.length === 1 ? operations[0]! : undefined;
  if (lone && !lone.fenced && lone.kind !== 'fence' && !inline) {
    // One plain operation, the usual call: built in one go (this runs per master per operation).
    const { command, channel } = announcement;
    const code = kindCode[lone.kind];
    const ttl = String(lone.ttlMs);
    if (lone.keys.length === 1 && head.length === 2) {
      return [head[0]!, head[1]!, '1', lone.keys[0]!, code, lone.value, ttl, '1', '0', command, channel, tag];
    }
    const count = String(lone.keys.length);
    return [...head, count, ...lone.keys, code, lone.value, ttl, count, '0', command, channel, tag];
  }
  const keys: string[] = [];
  const args: string[] = [];
  for (const operation of operations) {
    const { kind, keys: own, value, fenced } = operation;
    keys.push(...own);
    // A fenced acquire and a fence also own the resources' fence counters, after the lock keys.
    if (fenced || kind === 'fence') keys.push(...own.map(fenceKeyOf));
    const number = kind === 'fence' ? operation.token : operation.ttlMs;
    const owned = fenced || kind === 'fence' ? 2 * own.length : own.length;
    args.push(fenced ? 'A' : kindCode[kind], value, String(number), String(owned));
  }
  const trailer = [announcement.command, announcement.channel, tag];
  if (inline) return [...head, '0', ...keys, ...args, String(keys.length), ...trailer];
  return [...head, String(keys.length), ...keys, ...args, '0', ...trailer];
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
    replies[i] = typeof detail === 'string'
      ? { status: Number(reply[2 * i]), detail: 0, error: detail }
      : { status: Number(reply[2 * i]), detail: Number(detail) };
  }
  return replies;
}
