-- Postflight: add a newly recorded call's estimate to the counters of its
-- periods that are cached, and deduct it from the cached balance. Absent
-- keys are left absent: the next load reads them from the ledger, where
-- the record already is. Every key is checked before any write, because
-- Lua does not roll back a failed script.
-- KEYS: the usage keys of the call's open periods, then the balance key,
--   then, when ARGV[2] names the call's hold, the team's held hash, holds
--   hash and expiry set (see preflight.lua). ARGV[1]: the estimate, nano-USD.
-- ARGV[2] (optional): the hold id whose spend reservation ends here, in the
--   same script as its estimate is counted, so the call is never counted
--   twice nor by neither.
-- Reply: the number of keys changed.
local cost = ARGV[1]
local nkeys = #KEYS
if ARGV[2] then nkeys = nkeys - 3 end
local present = {}
for i = 1, nkeys do
  local v = redis.call('GET', KEYS[i])
  if v then
    if not (v == '0' or string.find(v, '^%-?[1-9]%d*$')) or #v > 18 then
      error('spend cache key ' .. KEYS[i] .. ' does not hold a counter')
    end
    present[#present + 1] = i
  end
end
for _, i in ipairs(present) do
  if i == nkeys then
    redis.call('DECRBY', KEYS[i], cost)
  else
    redis.call('INCRBY', KEYS[i], cost)
  end
end
if ARGV[2] then
  local H, R, Z = KEYS[nkeys + 1], KEYS[nkeys + 2], KEYS[nkeys + 3]
  endhold(H, R, Z, ARGV[2])
end
return #present
