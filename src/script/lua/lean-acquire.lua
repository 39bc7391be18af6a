-- A plain acquire's first lines: one key, and neither it nor its queue exists. Then acquire.lua
-- would grant with no ticket or fence to handle, so it is granted here; the reply is the value
-- itself (unique to the attempt, so it cannot be another call's answer).
if #KEYS == 1 and redis.pcall('EXISTS', KEYS[1], KEYS[1] .. '@QUEUE_SUFFIX@') == 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
