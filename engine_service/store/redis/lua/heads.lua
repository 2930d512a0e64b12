-- KEYS: game records. Each one's version and commit id (nil and nil: no such game).
local out = {}
for i = 1, #KEYS do
  local r = redis.call('HMGET', KEYS[i], 'version', 'cid')
  out[2 * i - 1] = r[1]
  out[2 * i] = r[2]
end
return out
