-- A lean script: one plain operation on a standalone master, the usual call, without the batch's
-- loop, table and dispatch. KEYS: its keys. ARGV: its value, its ttl (only for an operation that
-- reads one), the fields its file reads after the common four, then the call's tag. Releases are
-- announced on the standalone channel, assembled in. The assembler fills in the operation's
-- locals and its branch (the same file the batch script runs), and puts line.lua after this head.
local K, n = KEYS, #ARGV
local publish, channel, shard = 'PUBLISH', '@RELEASED_CHANNEL@', false
--@line
--@locals
local status, detail = 1, 0
--@operation
return { status, detail, ARGV[n] }
