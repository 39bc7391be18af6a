--! operation e f fields ttlMs token:number
-- Operations on keys that must all hold the value: extend ('e': a new ttl; a read hold, a new
-- deadline) and fence ('f': each counter raised to the token).
local shared
for k = first, locks do
  local current = redis.pcall('GET', K[k])
  if type(current) == 'table' then
    if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
    -- A live read hold can be extended (fenced it never is).
    if kind ~= 'e' or not line().reader(K[k], value) then status = @REFUSED@ break end
    shared = shared or {}
    shared[k] = true
  elseif current ~= value then status = @REFUSED@ break end
end
if status == @GRANTED@ and kind == 'e' then
  for k = first, last do
    if shared and shared[k] then
      line().hold(K[k], value, line().clock() + tonumber(ttlMs))
    else
      redis.call('PEXPIRE', K[k], ttlMs)
    end
  end
elseif status == @GRANTED@ then
  for k = locks + 1, last do
    local raw = redis.pcall('GET', K[k])
    local counter = type(raw) ~= 'table' and tonumber(raw or 0)
    if not counter then
      local why = type(raw) == 'table' and tostring(raw.err) or 'ERR value is not an integer'
      status, detail = @REFUSED_IN_WORDS@, 'fence counter ' .. K[k] .. ': ' .. why
      break
    end
    if counter < token then redis.call('SET', K[k], token) end
  end
end
