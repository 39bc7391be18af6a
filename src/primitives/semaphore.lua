--! operation p P fields ttlMs ticket from:number ageMs:number placeMs:number
-- A permit ('P' fair, 'p' racing): its ticket ('' none), the slot to try first, its acquire's age and place (as an
-- acquire's). Racing: the first free slot; refused, marks each slot's queue. Fair (docs/safety.md,
-- "The fair semaphore"): a free slot when fewer tickets are ahead in the line (every slot's queue; the first stands for all)
-- than slots are free; refused, joins them. Reply: {1, slot}; {0, soonest pttl (−1: none)}; {3, ms until the head lapses}.
local slots = last - first + 1
local fair, free, chosen = kind == 'P', 0, nil
local q = fair and redis.pcall('EXISTS', queue_of(K[first])) == 1 and queue_of(K[first])
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
  local left = false -- out of the line; a slot still free: the new head is told
  for k = first, last do left = q and ticket ~= '' and line().drop(queue_of(K[k]), ticket) or left end
  for k = first, last do
    if left and k ~= first + chosen and redis.call('EXISTS', K[k]) == 0 then announce(K[k], queue_of(K[k]), ticket) break end
  end
elseif ticket ~= '' then
  if free > 0 then status, detail = @QUEUED@, line().lapse(q, line().first(q)) end
  for k = first, last do if fair then line().join(queue_of(K[k]), ticket, ageMs, placeMs) else line().mark(queue_of(K[k]), ticket) end end
end
