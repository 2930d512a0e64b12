-- KEYS: news, then the windows of games of its bucket; ARGV: each window's cursor.
-- Returns the news stream's last id (what a blocking read waits after); for each game with
-- versions above its cursor, its position (1-based) and those entries, oldest first; and the
-- positions of games whose latest version is below their cursor (the store went back).
local out, behind = {}, {}
for i = 2, #KEYS do
  local top = redis.call('LINDEX', KEYS[i], -1)
  if top and #top >= 4 then  -- (a damaged top: nothing read, the watchers rebuild from the log)
    local n = struct.unpack('>I4', top) - tonumber(ARGV[i - 1])
    if n > 0 then
      out[#out + 1] = i - 1
      out[#out + 1] = redis.call('LRANGE', KEYS[i], -n, -1)
    elseif n < 0 then
      behind[#behind + 1] = i - 1
    end
  end
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
return {last and last[1] or '0-0', out, behind}
