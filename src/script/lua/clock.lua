--! operation t width 6
-- This master's TIME; with a ticket and its place, the ticket takes that place where it stands.
status, detail = 1, line().clock()
if not detail then status, detail = 2, 'TIME refused: ordering the line needs TIME on the master' end
-- With a ticket and its place: the ticket takes that place where it stands in line (XX).
local ticket, place = ARGV[i + 4], tonumber(ARGV[i + 5])
if ticket ~= '' and place then
  for k = first, last do redis.pcall('ZADD', queue_of(K[k]), 'XX', place, ticket) end
end
