-- A new version of a game, if it is still at the version and commit id the caller built on
-- (compare-and-set), in one step: see engine_service/store/redis/games.py.
-- KEYS: record, window, log, idem, active, ai, news, clock
-- ARGV: 1 id, 2 expected version, 3 expected cid, 4 new cid, 5 attempt (this write's own
--       random id), 6 over, 7 to_move, 8 updated ms, 9 enqueued at, 10 state, 11 window entry
--       (the update, see keys.pack_window_entry), 12 log entry, 13 idem key, 14 fingerprint,
--       15 ai payload, 16 window, 17 idle ttl (ms), 18 lease (ms), 19 finished ttl,
--       20 finished window ttl, 21 news length, 22 clock deadline (unix ms; '' for none) (in
--       this order: the store packs the game's, the text, the bytes, its settings and the
--       clock apart, see commit_args.py)
-- Returns {status, version, cid} ('ok', 'conflict', 'missing'), or {'duplicate', version,
-- cid, what the idempotency key wrote}.
local cur = redis.call('HMGET', KEYS[1], 'version', 'cid', 'at')
if not cur[1] then return {'missing', 0, ''} end
-- A commit sent again, or a key used again, is answered without applying anything; the same
-- value is written back so that a WAIT after this script covers the first write (WAIT counts
-- the replicas that have everything up to this connection's last write). The commit id alone
-- does not tell: another request playing the same action makes the same id.
if cur[2] == ARGV[4] and cur[3] == ARGV[5] then
  redis.call('HSET', KEYS[1], 'cid', cur[2])
  return {'ok', cur[1], cur[2]}
end
local nv = tonumber(cur[1]) + 1
local w = tonumber(ARGV[16])
-- Each key is also named by its version, under a field no key can be (a key is UTF-8, the
-- byte 255 never is): the key of the version that leaves the window is read with the key's
-- own record (walking the hash for it was a quarter of this script's time).
local gone = '\255' .. (nv - w)
local idem = redis.call('HMGET', KEYS[4], ARGV[13], gone)
if ARGV[13] ~= '' and idem[1] then
  redis.call('HSET', KEYS[4], ARGV[13], idem[1])
  return {'duplicate', cur[1], cur[2], idem[1]}
end
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return {'conflict', cur[1], cur[2]} end
redis.call('RPUSH', KEYS[2], ARGV[11])
redis.call('LTRIM', KEYS[2], -w, -1)
if ARGV[15] ~= '' then
  redis.call('HSET', KEYS[1], 'state', ARGV[10], 'version', nv, 'cid', ARGV[4], 'over', ARGV[6],
             'to_move', ARGV[7], 'updated', ARGV[8], 'at', ARGV[5], 'ai', nv .. '|' .. ARGV[15])
  redis.call('ZADD', KEYS[6], ARGV[9], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[10], 'version', nv, 'cid', ARGV[4], 'over', ARGV[6],
             'to_move', ARGV[7], 'updated', ARGV[8], 'at', ARGV[5])
  -- (the pending move and its index entry are written together: no field, no entry)
  if redis.call('HDEL', KEYS[1], 'ai') == 1 then redis.call('ZREM', KEYS[6], ARGV[1]) end
end
-- The log is rewritten whole rather than appended to: APPEND reserves as much room again as
-- the string holds (Redis grows strings greedily): measured, 0.55 KB more per live game at 4
-- players, 0.85 KB at 6 (+9%, +12%), for 6% of this script's instructions.
local log = redis.call('GET', KEYS[3])
redis.call('SET', KEYS[3], (log or '') .. ARGV[12], 'KEEPTTL')
local created = not log
redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[21], '*', 'g', ARGV[1])
-- (a game without clocks never has an entry: ZREM of nothing costs a lookup)
if ARGV[22] ~= '' and ARGV[6] ~= '1' then
  redis.call('ZADD', KEYS[8], ARGV[22], ARGV[1])
else
  redis.call('ZREM', KEYS[8], ARGV[1])
end
local record = nv .. '|' .. ARGV[14]
if ARGV[6] == '1' then
  -- Over: the record, log and last key are kept for replay; the window a little while, for
  -- watchers that fell behind near the end.
  redis.call('ZREM', KEYS[5], ARGV[1])
  redis.call('DEL', KEYS[4])
  if ARGV[13] ~= '' then redis.call('HSET', KEYS[4], ARGV[13], record) end
  for _, i in ipairs({1, 3, 4}) do redis.call('EXPIRE', KEYS[i], ARGV[19]) end
  redis.call('EXPIRE', KEYS[2], math.min(tonumber(ARGV[20]), tonumber(ARGV[19])))
  return {'ok', nv, ARGV[4]}
end
-- The field named by the byte alone marks a hash whose expiry is set: it is never removed,
-- so the hash never empties, and a new one (HSET adds three fields) is seen.
if ARGV[13] ~= '' then
  created = redis.call('HSET', KEYS[4], ARGV[13], record, '\255' .. nv, ARGV[13], '\255', '') == 3
            or created
end
if idem[2] then redis.call('HDEL', KEYS[4], idem[2], gone) end
-- The game's keys live a lease past its last move, renewed when less than the idle time is
-- left: once per lease rather than at every move (four EXPIRE and a ZADD were a sixth of
-- this script). Its active index entry is dated the lease's end, less the idle time, so
-- that the index drops it no sooner than the keys expire.
if created or redis.call('PTTL', KEYS[1]) < tonumber(ARGV[17]) then
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[18]) end
  redis.call('ZADD', KEYS[5], tonumber(ARGV[8]) + tonumber(ARGV[18]) - tonumber(ARGV[17]),
             ARGV[1])
end
return {'ok', nv, ARGV[4]}
