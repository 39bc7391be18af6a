--! operation p width 5
-- A semaphore's permit: the first free slot, trying from the given one.
-- ARGV after the common four: the slot to try first (0-based). Reply: {1, slot} the first free slot
-- (trying from the given one, wrapping) is now the value with PX ttl; {0, pttl} every slot is held:
-- pttl is the soonest to expire (−1: none will).
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
