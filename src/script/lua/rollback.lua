--! operation R fields ttlMs ticket ageMs:number placeMs:number
-- The rollback of a refused attempt of a lone key that may be handed to its waiter (issue 40;
-- model/line.pml HROLLBACK_AT). Where the key holds the attempt's value, handed to the ticket, or
-- granted to a ticket placed on the masters' clock (the same order on every master) with a live
-- place here and no other ticket ahead of it, it is kept for the ticket as a hand-off (line.lua
-- keep()): {0, "<ticket>=<value>"}, as a release names a head it handed a key. Otherwise it is
-- deleted, a ticket still in line here takes the value as the one to be handed (its place is not
-- renewed: a grant renews none), and the key goes to the head: {1, head}, as a release's. A key
-- with another value (refused here) is left alone: {0, 0}.
status = 0
local key, q = K[first], queue_of(K[first])
if redis.pcall('GET', key) == value then
  if line().handed(q, ticket, key) or (placeMs and not line().ahead(q, ticket, ageMs, placeMs) and line().keep(key, q, ticket, value)) then
    detail = ticket .. '=' .. value
  else
    status = redis.call('DEL', key)
    if line().lapse(q, ticket) > 0 then line().offer(q, ticket, value, ttlMs) end
    detail = announce(key, q, ticket) or 0
  end
end
