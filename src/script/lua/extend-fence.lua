--! operation e f width 4
-- Operations on keys that must all hold the value: extend ('e': a new ttl; a read hold, a new
-- deadline) and fence ('f': each counter raised to the token).
local shared
for k = first, locks do
  local current = redis.pcall('GET', K[k])
  if type(current) == 'table' then
    if string.sub(current.err, 1, 9) ~= 'WRONGTYPE' then error(current) end
    -- A live read hold can be extended (fenced it never is).
    if kind ~= 'e' or not line().reader(K[k], value) then
      status = 0
      break
    end
    shared = shared or {}
    shared[k] = true
  elseif current ~= value then
    status = 0
    break
  end
end
if status == 1 and kind == 'e' then
  for k = first, last do
    if shared and shared[k] then
      line().hold(K[k], value, line().clock() + tonumber(ttl))
    else
      redis.call('PEXPIRE', K[k], ttl)
    end
  end
elseif status == 1 then
  local token = tonumber(ttl)
  for k = locks + 1, last do
    local raw = redis.pcall('GET', K[k])
    local counter = type(raw) ~= 'table' and tonumber(raw or 0)
    if not counter then
      local why = type(raw) == 'table' and tostring(raw.err) or 'ERR value is not an integer'
      status, detail = 2, 'fence counter ' .. K[k] .. ': ' .. why
      break
    end
    if counter < token then redis.call('SET', K[k], ttl) end
  end
end
