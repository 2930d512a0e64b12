-- KEYS: record, window, log, idem, games, active, ai, reviews, clock; ARGV: id.
-- A game's keys (its stored reviews too) and its index entries; returns 1 if its record existed.
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[8])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
return existed
