--! operation s fields ttlMs ticket
-- A read hold (read-write locks): shared with other readers, refused by a writer that holds or waits.
-- Its ticket: '' for none. Reply: {1, 0} no key is held exclusively (each is free or a set of readers) and no ticket is
-- first in a key's queue: the value joins each key's readers until TIME + ttl; {0, pttl} a key is
-- held exclusively (or is of another type, or a sorted set not ours); {3, ms} a waiter is in line (a
-- writer: no new reader passes it), ms: when the latest such place lapses unless its waiter tries
-- again (-1: unknown); {2, "TIME refused: …"} the master refuses TIME (this read alone
-- fails). Readers never join queues: a refused one with a ticket marks each key's queue (line.lua
-- mark), so the releases it waits for are announced, and a granted one takes its marks away where
-- a queue is. The read holds' storage is line.lua's (extend, release and inspect know it too).
local queued = {}
for k = first, last do
  local held = line().kind(K[k], redis.call)
  if held ~= 'none' and held ~= 'read' then
    status, detail = @REFUSED@, redis.call('PTTL', K[k])
    break
  end
  local q = queue_of(K[k])
  queued[k] = status ~= @REFUSED@ and redis.pcall('EXISTS', q) == 1
  local head = queued[k] and line().first(q)
  if head then
    -- The latest place ahead (-1: unknown), as an exclusive acquire answers it.
    local lapse = line().lapse(q, head)
    if status == @GRANTED@ then status, detail = @QUEUED@, lapse else detail = line().later(detail, lapse) end
  end
end
local at = status == @GRANTED@ and line().clock()
if status == @GRANTED@ and not at then
  -- No clock, no deadline: this read alone fails (the batch's other operations go on).
  status, detail = @REFUSED_IN_WORDS@, 'TIME refused: read holds need TIME on the master'
elseif status == @GRANTED@ then
  for k = first, last do line().hold(K[k], value, at + tonumber(ttlMs)) end
end
if ticket ~= '' then
  for k = first, last do
    if status ~= @GRANTED@ then line().mark(queue_of(K[k]), ticket) elseif queued[k] then line().drop(queue_of(K[k]), ticket) end
  end
end
