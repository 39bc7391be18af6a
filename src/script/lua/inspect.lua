--! operation i
-- An operator's read of one key, its fence counter and its line; writes nothing.
-- Reads only, each a pcall: a refused command fails this inspection alone, never the batch.
local key, refused = K[first], nil
local function read(...)
  local result = redis.pcall(...)
  if type(result) == 'table' and result.err then
    refused = refused or result.err
    return nil
  end
  return result
end
local held = line().kind(key, read)
local now = line().clock()
local holder, readers = '', 0
if held == 'string' then holder = read('GET', key) or '' end
if held == 'read' then readers = line().readers(key, read) or 0 end
local fingerprint = line().fingerprint(key, held, read)
local fence = read('GET', K[last])
-- The queue as every queue read: one the master cannot serve now is no queue (see Queues).
local queued = redis.pcall('ZRANGEBYSCORE', queue_of(key), now and '(-@RESERVED@' or '(0', now and '(' .. -now or '+inf')
local pttl = read('PTTL', key)
if refused then
  status, detail = @REFUSED_IN_WORDS@, tostring(refused)
else
  detail = {held, holder, pttl, readers, fence or '', type(queued) == 'table' and not queued.err and #queued or 0, fingerprint}
end
