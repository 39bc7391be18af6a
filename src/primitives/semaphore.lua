--! operation p width 6
-- A semaphore's permit: the first free slot, trying from the given one.
-- ARGV after the common four: the permit's ticket ('' for none), the slot to try first (0-based).
-- A refused permit with a ticket marks each slot's queue (line.lua mark), so the releases it waits
-- for are announced. A granted one leaves them to lapse (the ticket's ttl; its release drops its
-- own slot's): looking for them would cost every grant a call per slot. Reply: {1, slot} the first free slot
-- (trying from the given one, wrapping) is now the value with PX ttl; {0, pttl} every slot is held:
-- pttl is the soonest to expire (−1: none will).
local slots = last - first + 1
local ticket, from = ARGV[i + 4], tonumber(ARGV[i + 5])
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
if status == 0 and ticket ~= '' then
  for k = first, last do line().mark(queue_of(K[k]), ticket) end
end
