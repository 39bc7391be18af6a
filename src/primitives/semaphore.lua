--! operation p P fields ttlMs ticket from:number ageMs:number placeMs:number
-- A permit ('P' fair, 'p' racing): its ticket ('' none), the slot to try first, its acquire's age and place (as an
-- acquire's). Racing: the first free slot; refused, marks the semaphore's queue. Fair (docs/safety.md,
-- "The fair semaphore"): a free slot when fewer tickets are ahead in the line (the semaphore's one queue,
-- which its slots share) than slots are free; refused, joins it. Reply: {1, slot}; {0, soonest pttl (−1: none)}; {3, ms until the head lapses}.
local slots = last - first + 1
local fair, free, chosen, line_q = kind == 'P', 0, nil, queue_of(K[first])
local q = fair and redis.pcall('EXISTS', line_q) == 1 and line_q
status, detail = @REFUSED@, -1
for j = 0, slots - 1 do
  local slot = (from + j) % slots
  local pttl = redis.call('PTTL', K[first + slot])
  if pttl == -2 then
    free, chosen = free + 1, chosen or slot
    if not q then break end -- no line: the first free slot, as racing
  elseif pttl >= 0 and (detail < 0 or pttl < detail) then detail = pttl -- the soonest a slot frees
  end
end
if free > (q and free > 0 and line().before(q, ticket, ageMs, placeMs, free) or 0) then
  redis.call('SET', K[first + chosen], value, 'PX', ttlMs)
  status, detail = @GRANTED@, chosen
  -- Out of the line; a slot still free: the new head is told.
  if q and ticket ~= '' and line().drop(q, ticket) then
    for k = first, last do if k ~= first + chosen and redis.call('EXISTS', K[k]) == 0 then announce(K[k], q, ticket) break end end
  end
elseif ticket ~= '' then
  if free > 0 then status, detail = @QUEUED@, line().lapse(q, line().first(q)) end
  -- The semaphore's one line (its slots share it: line.lua queue_of): a fair permit's place, a racing one's mark.
  if fair then line().join(line_q, ticket, ageMs, placeMs) else line().mark(line_q, ticket) end
end
