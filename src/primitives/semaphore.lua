--! operation p width 9
-- A semaphore's permit: a free slot, as its place in the semaphore's line allows.
-- ARGV after the common four: the permit's ticket ('' for none), the slot to try first (0-based),
-- the age of its acquire (ms) and its place ('' unknown), as an exclusive acquire's, and '1' for the
-- fair rule ('0': the racing one).
-- Fair: the semaphore's line is the queues of its slots. A refused permit joins every one of them,
-- so they hold the same tickets, and the first slot's stands for them all; a release of any slot
-- announces its head. A permit may take a slot when fewer live tickets are ahead of it in the line
-- (line().before) than slots are free: the head takes a freed slot, the second one of two free
-- ones. Granted, it leaves the line, and while a slot is still free the new head is told. Refused,
-- it joins (or, there, keeps its place in) every slot's queue. The limit is not the line's
-- business: a slot is taken only when free (one holder per slot); the line only refuses more.
-- Racing: the first free slot; a refused permit with a ticket only marks each slot's queue (line.lua
-- mark), so the releases it waits for are announced, and keeps no place.
-- Either way a grant that looks at no line (none there, or racing) costs what it did before lines.
-- Reply: {1, slot} that slot (the first free one from the given slot, wrapping) is now the value with
-- PX ttl; {0, pttl} every slot is held: pttl is the soonest to expire (−1: none will); {3, ms} slots
-- are free, each for a ticket ahead in line: ms is how long the head's place lasts unless its waiter
-- tries again (−1: unknown).
local slots = last - first + 1
local ticket, from, age, place = ARGV[i + 4], tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7])
local fair = ARGV[i + 8] == '1'
-- The line, where it exists: an uncontended permit pays one EXISTS for it, and stops at the first
-- free slot; with a line, every slot is looked at (the free ones are counted).
local q = fair and queue_of(K[first])
if q and redis.pcall('EXISTS', q) ~= 1 then q = false end
local free, chosen = 0, nil
status, detail = 0, -1
for j = 0, slots - 1 do
  local slot = (from + j) % slots
  local pttl = redis.call('PTTL', K[first + slot])
  if pttl == -2 then
    free = free + 1
    chosen = chosen or slot
    if not q then break end
  elseif pttl >= 0 and (detail < 0 or pttl < detail) then
    detail = pttl -- the soonest a slot frees
  end
end
local ahead = q and free > 0 and line().before(q, ticket, age, place, free) or 0
if free > ahead then
  redis.call('SET', K[first + chosen], value, 'PX', ttl)
  status, detail = 1, chosen
  if q and ticket ~= '' then
    local left = false
    for k = first, last do
      if line().drop(queue_of(K[k]), ticket) then left = true end
    end
    -- Another slot still free: the new head of the line may take it.
    if left then
      for k = first, last do
        if k ~= first + chosen and redis.call('EXISTS', K[k]) == 0 then
          announce(K[k], queue_of(K[k]), ticket)
          break
        end
      end
    end
  end
elseif ticket ~= '' then
  if free > 0 then status, detail = 3, line().lapse(q, line().first(q)) end
  for k = first, last do
    if fair then line().join(queue_of(K[k]), ticket, age, place) else line().mark(queue_of(K[k]), ticket) end
  end
end
