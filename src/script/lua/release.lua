--! operation r fields ticket
-- A release: compare-and-delete, the ticket out of every line, each freed key announced.
status = 0
for k = first, last do
  local q = queue_of(K[k])
  local current = redis.pcall('GET', K[k])
  -- A key handed to the ticket (an older attempt's value) goes with it (line.lua hand(), keep()).
  local mine = current == value
  if not mine and ticket ~= '' and type(current) == 'string' and line().handed(q, ticket, K[k]) then
    mine = redis.pcall('DEL', line().offered(q, ticket))
  end
  if redis.pcall('EXISTS', q) ~= 1 then q = false end
  local left = q and ticket ~= '' and line().drop(q, ticket, true)
  local who
  if type(current) == 'table' then
    if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
    -- A read hold leaves the key's readers; the key is free, and announced, once none is left.
    if line().reader(K[k], value) then status = status + 1 end
    if line().leave(K[k], value) then who = value end
  elseif mine then
    status = status + redis.call('DEL', K[k])
    who = ticket ~= '' and ticket or value
  end
  -- The ticket left the queue of a key nobody holds alone (free, or shared by readers), or a lock's
  -- release found its key free with a line (a native delete came first): whoever waits may go.
  if not who and ticket ~= '' and type(current) ~= 'string' and (left or (q and not current)) then who = ticket end
  if who then
    local head = announce(K[k], q, who)
    if head and detail == 0 then detail = head end
  end
end
