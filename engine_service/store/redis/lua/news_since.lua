-- KEYS: news; ARGV: an id read before, the most entries to return. The game ids of the
-- entries after that id, the last entry's id, and whether entries after that id may have been
-- trimmed already (the stream's first entry is later than the id and not the one right after).
local function id(s)
  local ms, seq = string.match(s, '(%d+)-(%d+)')
  return tonumber(ms), tonumber(seq)
end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if not first then return {{}, ARGV[1], 0} end
local fm, fs = id(first[1])
local am, as = id(ARGV[1])
local gap = 0
if fm > am or (fm == am and fs > as + 1) then gap = 1 end
local es = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
local gids = {}
for i = 1, #es do gids[i] = es[i][2][2] end
if #es >= tonumber(ARGV[2]) then gap = 1 end
return {gids, #es > 0 and es[#es][1] or ARGV[1], gap}
