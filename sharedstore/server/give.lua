-- Give units back to buckets, capped at capacity: the compensation of a
-- request-count op in cluster mode when another op of the plan refused.
-- KEYS[1]: the bucket. ARGV[1]: '<dd' expiry margin ms, hold TTL ms;
-- ARGV[2]: a record (format in common.lua) naming the bucket and the amount.
local margin, holdttl = sunpack('<dd', ARGV[1])
clock()
local _, entries = readRecord(ARGV[2])
loadAll(entries)
for _, e in ipairs(entries) do
  for k = e.k0 + 1, e.k0 + e.n do
    local x = lv[k] + e.amount
    if x > cap[k] then x = cap[k] end
    lv[k] = x
  end
  save(e.key, e.k0, e.n, margin, holdttl)
end
return 1
