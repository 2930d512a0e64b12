-- A game's stored reviews, read (ReviewStore.get).
-- KEYS[1] the game's record, KEYS[2] its reviews (a hash: "<seat>:<version>" -> review)
-- ARGV    the fields wanted
-- Returns their values (false where there is none). The reviews live as long as the game: their
-- expiry is set to the record's as they are read, and they go when the game has gone.
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
  redis.call('DEL', KEYS[2])
  return {}
end
if #ARGV == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return {}
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  redis.call('PERSIST', KEYS[2])
end
return redis.call('HMGET', KEYS[2], unpack(ARGV))
