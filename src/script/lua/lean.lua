-- A lean script: one plain operation on a standalone master, the usual call. KEYS: its keys.
-- ARGV: its value, its ttl (only for an operation that reads one), then the fields its file reads
-- after the common four. Its first lines (lean-<operation>.lua) answer the plain case with the
-- fewest commands before anything else is made; otherwise the operation's branch (the same file
-- the batch script runs) answers {status, detail, value}: the value is the call's tag (an
-- acquire's is unique to its attempt). Releases are announced on the standalone channel.
--@fast
local K = KEYS
local publish, channel, shard = 'PUBLISH', '@RELEASED_CHANNEL@', false
--@line
--@locals
local status, detail = @GRANTED@, 0
--@operation
return { status, detail, value }
