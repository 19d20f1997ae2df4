-- Settle or release a hold, exactly once: the record is deleted in the same
-- script, so a retried call finds nothing and changes nothing.
-- A release that finds no record leaves a tombstone instead: the caller may
-- have given up on an admission that has not run yet, and admit.lua commits
-- nothing for a released id, so the release holds in either order.
-- KEYS[1]: hold record, KEYS[2]: its release tombstone (KEYS[3..]: its buckets,
-- declared for cluster routing).
-- ARGV: mode ('settle' or 'release'), actual, expiry margin ms, hold TTL ms, tombstone TTL ms.
-- Record: JSON [{"k": bucket key, "c": kind, "a": amount, "l": [[budget, capacity, refill]], "o": 1 when
--   the admitted plan's overage rule is skip}]: the rule travels with the hold, so a reload never
--   changes how an older hold settles.
-- Reply: 1 when the hold was ended now, 0 when it was already ended, expired or never admitted.
local record = redis.call('GET', KEYS[1])
if not record then
  if ARGV[1] == 'release' then
    redis.call('SET', KEYS[2], '1', 'PX', tonumber(ARGV[5]))
  end
  return 0
end
redis.call('DEL', KEYS[1])
local settle, actual = ARGV[1] == 'settle', tonumber(ARGV[2])
local margin, holdttl = tonumber(ARGV[3]), tonumber(ARGV[4])
if actual < 0 then actual = 0 end
local now = now_us()
for _, e in ipairs(cjson.decode(record)) do
  local limits = {}
  for j, l in ipairs(e.l) do
    limits[j] = { budget = l[1], cap = tonumber(l[2]), rate = tonumber(l[3]) }
  end
  local amount = tonumber(e.a)
  local lv, last = load(e.k, limits, now)
  for j, l in ipairs(limits) do
    if settle and e.c == 3 then
      if actual < amount then
        lv[j] = math.min(l.cap, lv[j] + (amount - actual))
      elseif actual > amount then
        local d = actual - amount
        if e.o ~= 1 then
          -- debt: the whole overage is charged, the level may go below
          -- zero and refill repays it
          lv[j] = lv[j] - d
        elseif lv[j] >= d then
          -- skip: an overage the bucket cannot cover consumes nothing
          lv[j] = lv[j] - d
        end
      end
    else
      lv[j] = math.min(l.cap, lv[j] + amount)
    end
  end
  save(e.k, limits, lv, last, margin, holdttl)
end
return 1
