--! operation x fields expected
-- An operator's force release of one key, if its holders are the ones inspected.
-- An operator's, whatever holds the key: its fence counter (tokens must stay monotonic) and its
-- queue (its waiters are alive) stay.
local key = K[first]
local held = line().kind(key, redis.call)
status = 0
if (held == 'string' or held == 'read') and expected ~= '' and expected ~= line().fingerprint(key, held, redis.call) then
  -- Not the holders the operator was shown: theirs is a live lock, perhaps.
  status, detail = @REFUSED_IN_WORDS@, 'changed: not the holders inspected, left alone'
elseif held == 'string' or held == 'read' then
  status = redis.call('DEL', key)
  local q = queue_of(key)
  if redis.pcall('EXISTS', q) ~= 1 then q = false end
  detail = announce(key, q, value) or 0
elseif held ~= 'none' then
  status, detail = @REFUSED_IN_WORDS@, 'not a lock: a key of type ' .. held .. ', left alone'
end
