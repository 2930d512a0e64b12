-- A seat's time ran out and a bot plays for it: the game's clock entry becomes a pending AI
-- move (dispatched, and swept again if unanswered, as any AI move), if the game is still at
-- the version and commit id the sweeper read and its clock entry is still there: one replica
-- wins.
-- KEYS: record, clock, ai; ARGV: 1 id, 2 version, 3 cid, 4 payload, 5 enqueued at.
local cur = redis.call('HMGET', KEYS[1], 'version', 'cid')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return 0 end
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'ai', ARGV[2] .. '|' .. ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return 1
