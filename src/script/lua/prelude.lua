-- The batch's frame: where its keys are (declared, or inline at the start of ARGV) and how a
-- key's queue is named. Then line.lua, then frame.lua runs the operations (src/script/codec.ts has
-- the contract; scripts/assemble-lua.ts puts the files together).
local n = #ARGV
local inline = tonumber(ARGV[n - 3])
local K = KEYS
if inline > 0 then
  K = {}
  for i = 1, inline do K[i] = ARGV[i] end
end
local shard = ARGV[n - 2] == 'SPUBLISH'
local function queue_of(key)
  if shard then
    local open = string.find(key, '{', 1, true)
    local close = open and string.find(key, '}', open + 1, true)
    if not close or close == open + 1 then return '{' .. key .. '}:redlock-queue' end
  end
  return key .. ':redlock-queue'
end
