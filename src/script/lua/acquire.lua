--! operation a A fields ttlMs ticket ageMs:number placeMs:number
-- An exclusive acquire, plain or fenced ('A': its fence counters follow its keys), with its
-- ticket in the lines of the keys that refuse it (no hold-and-wait).
-- Per key: held, or another ticket ahead in its line (placed earlier). Without a ticket the first such
-- key decides; with one, every key is looked at: the ticket waits in the lines of those alone, and
-- refused by a held key, in the held keys' lines alone.
-- (Made on the first refusal: an uncontended acquire allocates nothing for it.)
-- A lone key, unfenced, with a ticket may be handed to its waiter (issue 40; line.lua offer(), hand()):
-- a key handed to the ticket is granted again, with this attempt's value, whoever is in line.
local blocked, held, handing = nil, 0, last == first and ticket ~= ''
for k = first, locks do
  -- One EXISTS for the key and its queue: an uncontended acquire pays nothing for queues.
  local q = queue_of(K[k])
  local found = redis.pcall('EXISTS', K[k], q)
  if type(found) ~= 'number' then found, q = redis.call('EXISTS', K[k]), false end
  local head
  if handing then handing = q and found > 0 and q end
  local taken = found == 2 or (found == 1 and (not q or redis.call('EXISTS', K[k]) == 1))
  if taken and handing and line().handed(q, ticket, K[k]) then found, taken = 0, false end
  if taken then
    if status ~= @REFUSED@ then status, detail = @REFUSED@, redis.call('PTTL', K[k]) end
    blocked = blocked or {}
    blocked[k], held = 'held', held + 1
  elseif found == 1 then
    head = line().ahead(q, ticket, ageMs, placeMs)
  end
  if head then
    -- Refused by the line alone: the detail is when the latest place ahead lapses (-1: unknown),
    -- so a waiter behind a ticket no longer renewed tries again then, not a retry sleep later.
    local lapse = line().lapse(q, head)
    if status == @GRANTED@ then status, detail = @QUEUED@, lapse
    elseif status == @QUEUED@ then detail = line().later(detail, lapse) end
    blocked = blocked or {}
    blocked[k] = true
  end
  if status ~= @GRANTED@ and ticket == '' then break end
end
if status ~= @GRANTED@ and ticket ~= '' then
  -- The ticket stands in the lines of the keys that refused it: refused by a held key, those of the
  -- held keys alone (model/line.pml STANDS: behind another waiter in a free key's line, it would come
  -- to head it, and keep it from a nested holder of its held key until its next attempt), and past
  -- its reservation of a held key, not while another held key refuses it too (REJOINS). Refused by
  -- held keys, next in each of their lines, it keeps a reservation on the others (line.lua
  -- reserve()); else it leaves those (announcing them: free, they may go to the next).
  local reserving = status == @REFUSED@
  for k = first, locks do
    local q = queue_of(K[k])
    if blocked[k] == true and held > 0 then blocked[k] = nil end -- reserved or left below, as a free key
    if blocked[k] == 'held' and held > 1 and (line().reserved(q, ticket) or math.huge) <= (line().clock() or 0) then line().drop(q, ticket)
    elseif blocked[k] and line().join(q, ticket, ageMs, placeMs, locks > first) and handing then line().offer(q, ticket, value, ttlMs) end
    if reserving and locks > first and blocked[k] == 'held' and line().ahead(q, ticket, ageMs, placeMs) then reserving = false end
  end
  for k = first, locks do
    local q = queue_of(K[k])
    if not blocked[k] and not (reserving and line().reserve(q, ticket, ageMs, placeMs)) and line().drop(q, ticket) then announce(K[k], q, ticket) end
  end
end
if status == @GRANTED@ then
  for k = locks + 1, last do
    local counter = redis.pcall('INCR', K[k])
    if type(counter) ~= 'number' then
      status, detail = @REFUSED_IN_WORDS@, 'fence counter ' .. K[k] .. ': ' .. tostring(counter.err)
      break
    end
    if counter > detail then detail = counter end
  end
end
if status == @GRANTED@ then
  for k = first, locks do redis.call('SET', K[k], value, 'PX', ttlMs) end
  -- Contended, a grant takes back the ticket's hand-off value (and a handed key's mark).
  if handing then redis.pcall('DEL', line().offered(handing, ticket)) end
end
