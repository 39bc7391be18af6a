-- The batch's frame: where its keys are (declared, or inline at the start of ARGV) and where
-- releases are announced. Then line.lua, then frame.lua runs the operations (src/script/codec.ts has
-- the contract; scripts/assemble-lua.ts puts the files together).
local n = #ARGV
local inline = tonumber(ARGV[n - 3])
local K = KEYS
if inline > 0 then K = {} for i = 1, inline do K[i] = ARGV[i] end end
local publish, channel = ARGV[n - 2], ARGV[n - 1]
local shard = publish == 'SPUBLISH'
