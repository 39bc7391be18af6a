--! operation s width 4
-- A read hold (read-write locks): shared with other readers, refused by a writer that holds or waits.
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
