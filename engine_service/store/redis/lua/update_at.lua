-- KEYS: window; ARGV: version. The entry of that version, if the window holds it.
local top = redis.call('LINDEX', KEYS[1], -1)
if not top or #top < 4 then return false end
local i = tonumber(ARGV[1]) - struct.unpack('>I4', top) - 1
if i >= 0 then return false end
return redis.call('LINDEX', KEYS[1], i)
