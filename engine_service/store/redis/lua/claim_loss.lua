-- KEYS: the loss's claim, the game's record; ARGV: the claim's time to live (ms), "1" when
-- the loss is of the whole game. One count per loss, however many replicas notice it: 1 for
-- the first to claim it, 0 for every later one while the claim lives. A whole game's loss is
-- not claimed while the record exists (it came back: there is no such loss to count).
if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 1 end
return 0
