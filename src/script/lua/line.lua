-- How a key's queue is named, the queues' and read holds' helpers (made on first use: closures
-- cost every call), and the announcement of a freed key. @READ_HOLDS_MARK@ is filled in when the
-- script is assembled. The frame before it declares K, shard, publish and channel.
local function queue_of(key)
  -- A semaphore's slots share one line, its slot 0's queue (marks.ts lineKey).
  if string.find(key, '@PERMIT_INFIX@', 1, true) then key = string.gsub(key, '@PERMIT_PATTERN@%d+$', '@PERMIT_INFIX@0') end
  if shard then
    local open = string.find(key, '{', 1, true)
    local close = open and string.find(key, '}', open + 1, true)
    if not close or close == open + 1 then return '{' .. key .. '}@QUEUE_SUFFIX@' end
  end
  return key .. '@QUEUE_SUFFIX@'
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
    local t = now == nil and queue('TIME')
    if now == nil then now = t and tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) or false end
    return now
  end
  lines = {
    -- Read holds, every rule of them (see the contract): a set of readers carries the mark, scored 0,
    -- below every deadline, so it is never a reader, never lapses and never sets the expiry. A sorted
    -- set without it is not ours: nothing here reads or writes it.
    shared = function(key)
      return tonumber(queue('ZSCORE', key, '@READ_HOLDS_MARK@')) == 0
    end,
    -- What a key is: 'none', 'string' (a lock or a permit), 'read' (read holds), else its type ('zset'
    -- for a sorted set not ours). call: redis.call, or an inspection's pcall (nil when refused).
    kind = function(key, call)
      local held = call('TYPE', key)
      held = held and held.ok or 'none'
      return held == 'zset' and lines.shared(key) and 'read' or held
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
      redis.call('ZADD', key, 0, '@READ_HOLDS_MARK@', deadline, value)
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
      for _, member in ipairs(members) do if member ~= '@READ_HOLDS_MARK@' then values[#values + 1] = member end end
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
    -- A ticket's ttl: the number it starts with ("<ttl>-<id>", codec.ts newTicket), or nil.
    ttl = function(ticket)
      return tonumber(string.match(ticket, '^(%d+)%-'))
    end,
    -- Where a ticket's hand-off value is kept (issue 40, offer() below): beside q, so in its slot.
    offered = function(q, ticket)
      return q .. ':' .. ticket
    end,
    -- Issue 40: refused by a held key, a ticket keeps its place on the free keys of its call, for half
    -- a ticket ttl from the first such reservation here, never renewed nor made again in the call;
    -- meanwhile its places in q lapse by then (join()'s `multi`), swept by first() (model/line.pml L1,
    -- L4, L5). The end, '^' .. ticket, is scored below every mark (@RESERVED@ less): drop() takes it.
    reserve = function(q, ticket, age, place)
      local at, ttl, ends = clock(), lines.ttl(ticket), lines.reserved(q, ticket)
      if not (at and ttl) or (ends and ends <= at) then return false end
      if not ends then queue('ZADD', q, -(@RESERVED@ + at + math.floor(ttl / 2)), '^' .. ticket) end
      return lines.join(q, ticket, age, place, true) ~= nil
    end,
    -- When the ticket's reservation here ends (epoch ms), or nil.
    reserved = function(q, ticket)
      local ends = -(tonumber(queue('ZSCORE', q, '^' .. ticket)) or 0) - @RESERVED@
      return ends > 0 and ends or nil
    end,
    -- A waiter's deadline mark: its ticket lapses then (TIME + the ticket's ttl, or `cap` if sooner)
    -- unless it tries again; the queue lives as long as its longest ticket. A waiter outside the line
    -- (a reader, a permit) leaves only this mark on the queues of the keys that refused it, so their
    -- releases announce (an empty line is not). first() drops it once lapsed. False without TIME.
    mark = function(q, ticket, cap)
      local at = clock()
      local ttl = lines.ttl(ticket)
      if not (at and ttl) then return false end
      if queue('ZADD', q, -math.min(at + ttl, cap or at + ttl), '~' .. ticket) then
        local pttl = queue('PTTL', q)
        if pttl and pttl < ttl then queue('PEXPIRE', q, ttl) end
      end
      return true
    end,
    -- The ticket's place: the one its acquire gives (the same on every master), or until it gives
    -- one, this master's own estimate of when the acquire began (TIME minus its age), kept (NX).
    -- `multi`: a call of several keys, whose place lapses by the end of its reservation in q, if live.
    join = function(q, ticket, age, place, multi)
      local at = clock()
      if not (at and lines.ttl(ticket)) then return end
      local placed = place and queue('ZADD', q, place, ticket) or queue('ZADD', q, 'NX', at - age, ticket)
      local ends = placed and multi and lines.reserved(q, ticket)
      return placed and lines.mark(q, ticket, ends and ends > at and ends or nil)
    end,
    -- The ticket ahead of this one in the line, if any: a live one placed earlier (on a tie, the
    -- lower ticket, as the set sorts). This one's place is the acquire's, else where it stands, else
    -- this master's estimate (TIME minus its age). Without a ticket, anyone in line is ahead. A ticket
    -- coming back to a line it left goes by its place, not behind whoever heads the line meanwhile.
    ahead = function(q, ticket, age, place)
      local head = lines.first(q)
      if not head or head == ticket then return false end
      if ticket == '' then return head end
      local mine = place or tonumber(queue('ZSCORE', q, ticket))
      if not mine then
        local at = clock()
        if not at then return head end
        mine = at - age
      end
      local theirs = tonumber(queue('ZSCORE', q, head))
      return (not theirs or theirs < mine or (theirs == mine and head < ticket)) and head
    end,
    -- Of the first `most` live tickets, how many are ahead of this one (ahead()'s order; compared here: tostring rounds)
    before = function(q, ticket, age, place, most)
      if not lines.first(q) then return 0 end
      local mine, at, count = place or (ticket ~= '' and tonumber(queue('ZSCORE', q, ticket))), ticket ~= '' and clock(), 0
      mine = mine or (at and at - age)
      local firsts = queue('ZRANGEBYSCORE', q, '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, most) or {}
      for j = 1, #firsts, 2 do
        local other, theirs = firsts[j], tonumber(firsts[j + 1])
        if other ~= ticket and (not mine or theirs < mine or (theirs == mine and other < ticket)) then count = count + 1 end
      end
      return count
    end,
    -- Ms until the ticket's place lapses unless renewed (its mark on TIME); -1: unknown (no mark or TIME).
    lapse = function(q, ticket)
      local deadline, at = tonumber(queue('ZSCORE', q, '~' .. ticket)), clock()
      return deadline and at and math.max(0, -deadline - at) or -1
    end,
    -- The later of two lapses (-1, unknown, if either is).
    later = function(a, b)
      return (a < 0 or b < 0) and -1 or math.max(a, b)
    end,
    -- Out of the line; `all`: the call is over, its reservation's end and hand-off value go too.
    drop = function(q, ticket, all)
      if all then queue('DEL', lines.offered(q, ticket)) end
      return (queue('ZREM', q, ticket, '~' .. ticket, all and '^' .. ticket or ticket) or 0) > 0
    end,
    -- Issue 40, the hand-off (docs/design/performance.md; model/line.pml -DHANDOFF, redlock.pml
    -- -DHANDOFF). A refused lone-key attempt leaves its value beside its place (offered()),
    -- for the sooner of the lock's ttl and the ticket's (its place lapses then unless renewed).
    offer = function(q, ticket, value, ttl)
      queue('SET', lines.offered(q, ticket), value, 'PX', math.min(ttl, lines.ttl(ticket)))
    end,
    -- Whether the key holds a value handed to the ticket (its hand-off value is set on the key).
    handed = function(q, ticket, key)
      local mine = queue('GET', lines.offered(q, ticket))
      return mine and redis.pcall('GET', key) == mine
    end,
    -- A free key to `head`, first in q, if it left a hand-off value: set to it for as long as that
    -- value lasts (its PX, set after the attempt that gave it began: so at least as long as the
    -- waiter counts it, and a dead or cut-off head's no longer than a ticket's ttl after its last
    -- attempt), and the head out of the line. Its value stays, the key's mark of being handed to
    -- it, and so does its deadline mark, as a waiter's outside the line: the queue lasts as long,
    -- and the ticket's release finds and drops both. Answers the value, or nil (nothing handed).
    hand = function(key, q, head)
      local offered = lines.offered(q, head)
      local value = queue('GET', offered)
      if not value or redis.call('EXISTS', key) == 1 then return nil end
      local px = tonumber(queue('PTTL', offered)) or 0
      if px <= 0 then return nil end
      redis.call('SET', key, value, 'PX', px)
      queue('ZREM', q, head)
      return value
    end,
    -- A key the ticket's attempt was granted, kept for it as if handed (the rollback's kept grant):
    -- for the sooner of what is left of its ttl and a ticket's ttl from now (the attempt began
    -- before: as long as the waiter counts it), marked handed to it, and the ticket out of the line
    -- as hand() takes it. Only while its place here is live, which this does not renew (a grant
    -- renews no place): a waiter that never reaches a quorum keeps nothing for long past it.
    -- False, nothing kept.
    keep = function(key, q, ticket, value)
      local px = math.min(redis.call('PTTL', key), lines.ttl(ticket))
      if px <= 0 or lines.lapse(q, ticket) <= 0 then return false end
      redis.call('PEXPIRE', key, px)
      queue('SET', lines.offered(q, ticket), value, 'PX', px)
      queue('ZREM', q, ticket)
      return true
    end,
  }
  return lines
end
-- A release's announcement, "<who>:<first ticket in line, or ''>:<key>": the waiter whose turn it
-- is wakes at once. A head that left a hand-off value is handed the key, "<who>:<ticket>=<value>:<key>".
-- A head's ticket names its process ("<ttl>-<process>.<n>", codec.ts newTicket): a standalone
-- master tells that process alone, on its own channel, unless nobody there hears it (not
-- subscribed to it, or an ACL refused it); the rest goes to every process.
-- Answers that first ticket (with its value, if handed). Only where someone may listen: the key's
-- queue exists (q, a ticket or a waiter's mark in it); no queue, no PUBLISH. Best effort (pcall): a
-- refused PUBLISH comes after the delete and must not turn a done release into an error.
local function announce(key, q, who)
  if not q then return nil end
  local head = line().first(q)
  local to = head and not shard and string.match(head, '^%d+%-(%x+)%.')
  local handed = head and line().hand(key, q, head)
  if handed then head = head .. '=' .. handed end
  local message = who .. ':' .. (head or '') .. ':' .. key
  local heard = to and redis.pcall(publish, channel .. ':' .. to, message)
  if type(heard) ~= 'number' or heard == 0 then redis.pcall(publish, channel, message) end
  return head
end
