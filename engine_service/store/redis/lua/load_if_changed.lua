-- KEYS: record; ARGV: known cid, "1" to include meta.
-- The record's version, commit id and over flag; its state (and meta) only when the commit id
-- is not the one the caller holds. False: no such game.
local r = redis.call('HMGET', KEYS[1], 'version', 'cid', 'over')
if not r[1] then return false end
if r[2] == ARGV[1] then return r end
local s = redis.call('HMGET', KEYS[1], 'state', 'meta')
if ARGV[2] == '1' then return {r[1], r[2], r[3], s[1], s[2]} end
return {r[1], r[2], r[3], s[1]}
