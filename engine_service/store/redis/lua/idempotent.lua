-- KEYS: idempotency keys; ARGV: key, "1" to write it back (as commit.lua does, for WAIT).
-- What the key wrote ("<version>|<fingerprint>"), or nil.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and ARGV[2] == '1' then redis.call('HSET', KEYS[1], ARGV[1], v) end
return v
