-- Refresh: set each present counter to the ledger's figure (confirmed
-- aggregate plus pending estimates), keeping its expiry. An absent key
-- stays absent: it is loaded on demand.
-- KEYS[i] gets ARGV[i]. Reply: the number of keys set.
local n = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i], 'XX', 'KEEPTTL') then n = n + 1 end
end
return n
