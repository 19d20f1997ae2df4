-- Settle or release a hold, exactly once: the record is deleted in the same
-- script, so a retried call finds nothing and changes nothing.
-- A release that finds no record leaves a tombstone instead: the caller may
-- have given up on an admission that has not run yet, and admit.lua commits
-- nothing for a released id, so the release holds in either order.
-- KEYS[1]: hold record, KEYS[2]: its release tombstone (KEYS[3..]: its buckets,
-- declared for cluster routing).
-- ARGV[1]: mode ('settle' or 'release'); ARGV[2]: '<dddd' actual, expiry margin ms, hold TTL ms,
--   tombstone TTL ms.
-- The record (format in common.lua) carries the admitted plan's overage rule, so a reload never
-- changes how an older hold settles.
-- Reply: 1 when the hold was ended now, 0 when it was already ended, expired or never admitted.
local actual, margin, holdttl, tombttl = sunpack('<dddd', ARGV[2])
local rec = redis.call('GET', KEYS[1])
if not rec then
  if ARGV[1] == 'release' then
    redis.call('SET', KEYS[2], '1', 'PX', fmt('%d', tombttl))
  end
  return 0
end
redis.call('DEL', KEYS[1])
local settle = ARGV[1] == 'settle'
if actual < 0 then actual = 0 end
clock()
local skip, entries = readRecord(rec)
loadAll(entries)
for _, e in ipairs(entries) do
  local amount = e.amount
  for k = e.k0 + 1, e.k0 + e.n do
    if settle and e.kind == 3 then
      if actual < amount then
        local x = lv[k] + (amount - actual)
        if x > cap[k] then x = cap[k] end
        lv[k] = x
      elseif actual > amount then
        local d = actual - amount
        if not skip then
          -- debt: the whole overage is charged, the level may go below
          -- zero and refill repays it
          lv[k] = lv[k] - d
        elseif lv[k] >= d then
          -- skip: an overage the bucket cannot cover consumes nothing
          lv[k] = lv[k] - d
        end
      end
    else
      local x = lv[k] + amount
      if x > cap[k] then x = cap[k] end
      lv[k] = x
    end
  end
  save(e.key, e.k0, e.n, margin, holdttl)
end
return 1
