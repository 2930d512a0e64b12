-- KEYS: the bucket's mark, its news; ARGV: a new mark. The bucket's mark (ARGV[1], set now,
-- when it has none: a new store, or one emptied since) and the news stream's last id ('0-0'
-- when there is none): what tells a watch reader that the store lost what it had read.
local mark = redis.call('GET', KEYS[1])
if not mark then
  redis.call('SET', KEYS[1], ARGV[1])
  mark = ARGV[1]
end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
return {mark, last and last[1] or '0-0'}
