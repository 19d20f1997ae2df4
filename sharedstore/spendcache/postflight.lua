-- Postflight: add a newly recorded call's estimate to the counters of its
-- periods that are cached, and deduct it from the cached balance. Absent
-- keys are left absent: the next load reads them from the ledger, where
-- the record already is. Every key is checked before any write, because
-- Lua does not roll back a failed script.
-- KEYS: the usage keys of the call's open periods, then (last) the balance
--   key. ARGV[1]: the estimate, nano-USD.
-- Reply: the number of keys changed.
local cost = ARGV[1]
local present = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    if not (v == '0' or string.find(v, '^%-?[1-9]%d*$')) or #v > 18 then
      error('spend cache key ' .. KEYS[i] .. ' does not hold a counter')
    end
    present[#present + 1] = i
  end
end
for _, i in ipairs(present) do
  if i == #KEYS then
    redis.call('DECRBY', KEYS[i], cost)
  else
    redis.call('INCRBY', KEYS[i], cost)
  end
end
return #present
