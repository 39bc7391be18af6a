-- A plain release's first lines: one key that holds the value, and no queue (so no ticket to drop
-- and nobody to tell). Then release.lua would only delete it, so it is deleted here; the reply is
-- the count, as release.lua's status.
if #KEYS == 1 and redis.pcall('GET', KEYS[1]) == ARGV[1] and redis.pcall('EXISTS', KEYS[1] .. '@QUEUE_SUFFIX@') ~= 1 then
  return redis.call('DEL', KEYS[1])
end
