--! operation t fields ticket placeMs:number
-- This master's TIME; with a ticket and its place, the ticket takes that place where it stands.
status, detail = @GRANTED@, line().clock()
if not detail then status, detail = @REFUSED_IN_WORDS@, 'TIME refused: ordering the line needs TIME on the master' end
-- With a ticket and its place: the ticket takes that place where it stands in line (XX).
if ticket ~= '' and placeMs then
  for k = first, last do redis.pcall('ZADD', queue_of(K[k]), 'XX', placeMs, ticket) end
end
