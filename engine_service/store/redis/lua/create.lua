-- A new game: its record, its first update in its window, its entries in the bucket's
-- indexes (and the AI index when an AI seat moves first) and a line in the bucket's news, in
-- one step. Returns 1, or 0 if a game with that id exists (1 again for the same commit id: a
-- create sent again).
-- KEYS: record, window, games, active, ai, news, clock
-- ARGV: 1 id, 2 cid, 3 state, 4 meta, 5 window entry, 6 to_move, 7 created ms, 8 ai payload,
--       9 enqueued at, 10 idle ttl, 11 news length, 12 clock deadline (unix ms; '' for none)
local cid = redis.call('HGET', KEYS[1], 'cid')
if cid == ARGV[2] then
  -- Written back, so that a WAIT after this script covers the first write (as commit.lua).
  redis.call('HSET', KEYS[1], 'cid', cid)
  return 1
end
if cid then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', 1, 'cid', ARGV[2], 'meta', ARGV[4],
           'over', 0, 'to_move', ARGV[6], 'updated', ARGV[7])
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[9], ARGV[1])
  redis.call('HSET', KEYS[1], 'ai', '1|' .. ARGV[8])
end
if ARGV[12] ~= '' then redis.call('ZADD', KEYS[7], ARGV[12], ARGV[1]) end
redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[11], '*', 'g', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[10])
redis.call('EXPIRE', KEYS[2], ARGV[10])
return 1
