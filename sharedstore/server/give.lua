-- Give units back to one bucket, capped at capacity: the compensation of a
-- request-count op in cluster mode when another op of the plan refused.
-- KEYS[1]: bucket. ARGV: amount, expiry margin ms, hold TTL ms, nlimits, then per limit: budget, capacity, refill/s.
local amount, margin, holdttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local limits, a = {}, 5
for j = 1, tonumber(ARGV[4]) do
  limits[j] = { budget = ARGV[a], cap = tonumber(ARGV[a + 1]), rate = tonumber(ARGV[a + 2]) }
  a = a + 3
end
local lv, last = load(KEYS[1], limits, now_us())
for j, l in ipairs(limits) do lv[j] = math.min(l.cap, lv[j] + amount) end
save(KEYS[1], limits, lv, last, margin, holdttl)
return 1
