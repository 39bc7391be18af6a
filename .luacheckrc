-- luacheck for the assembled script (npm run lint:lua): Redis runs Lua 5.1 with these globals.
std = 'lua51'
read_globals = { 'redis', 'KEYS', 'ARGV' }
max_line_length = 160 -- a branch's generated locals line is long
-- A lean script starts status at 1, as the batch's frame does; a release's branch sets it first.
ignore = { '311/status' }
