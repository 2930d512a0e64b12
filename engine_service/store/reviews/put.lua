-- One review kept (ReviewStore.put).
-- KEYS[1] the game's record, KEYS[2] its reviews (a hash: "<seat>:<version>" -> review)
-- ARGV[1] the field, ARGV[2] the review
-- Returns 1, or 0 (nothing written) when the game has gone. The reviews' expiry is the
-- record's: they live as long as the game.
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  redis.call('PERSIST', KEYS[2])
end
return 1
