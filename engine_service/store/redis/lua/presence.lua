-- Who is here: a game's present seats, one member "<seat>:<holder>" per seat a replica (the
-- holder) has an open watch stream for, scored by when it lapses unless renewed. Renews the
-- holder's seats, drops the ones it no longer holds and every lapsed member, then answers
-- the members left, in one step.
-- KEYS: presence; ARGV: 1 now (ms), 2 lapses at (ms), 3 ttl (ms), 4 holder, 5 seats held
-- ("0,2" or ""), 6 seats let go (likewise).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for seat in string.gmatch(ARGV[6], '[^,]+') do
  redis.call('ZREM', KEYS[1], seat .. ':' .. ARGV[4])
end
local held = false
for seat in string.gmatch(ARGV[5], '[^,]+') do
  redis.call('ZADD', KEYS[1], ARGV[2], seat .. ':' .. ARGV[4])
  held = true
end
if held then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return redis.call('ZRANGE', KEYS[1], 0, -1)
