-- The batch: each operation in turn, its reply two values, then the call's tag. Each
-- operation's branch is its own file (--! operation <kinds> fields <names>); WIDTHS, the branches
-- and each branch's fields as locals are filled in when the script is assembled.
--@widths
local reply = {}
local first = 1
local i = inline + 1
while i <= n - 4 do
  local kind, value = ARGV[i], ARGV[i + 1]
  local last = first + tonumber(ARGV[i + 2]) - 1
  local status, detail = @GRANTED@, 0
  local width = WIDTHS[kind]
  if inline > 0 then
    for k = first, last do
      if type(redis.pcall('EXISTS', K[k])) == 'table' then status = @NOT_SERVED_HERE@ break end
    end
  end
  local locks = (kind == 'A' or kind == 'f') and (first + last - 1) / 2 or last
  if status == @NOT_SERVED_HERE@ then
    detail = 0
  --@operations
  else
    error('unknown operation: ' .. tostring(kind))
  end
  reply[#reply + 1], reply[#reply + 2] = status, detail
  first = last + 1
  i = i + width
end
reply[#reply + 1] = ARGV[n]
return reply
