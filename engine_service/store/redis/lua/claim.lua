-- KEYS: record; ARGV: old "<version>|<payload>", new one. The pending AI move's payload
-- replaced if it is still the old one (1), else nothing (0).
local cur = redis.call('HGET', KEYS[1], 'ai')
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'ai', ARGV[2])
return 1
