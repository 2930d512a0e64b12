-- KEYS: a string; ARGV: its length, its new value. Replaced (TTL kept) if the length is that.
if redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
