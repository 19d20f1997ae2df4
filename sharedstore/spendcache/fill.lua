-- Fill a team's absent cache keys from a ledger snapshot, never
-- overwriting one that is present (a postflight may have added to it).
-- KEYS[1]: the policy hash, KEYS[2]: the balance key, KEYS[3..]: usage keys.
-- ARGV[1]: policy and balance TTL ms; ARGV[2]: n, the number of policy
--   hash field/value pairs that follow (ARGV[3..2+2n]); then the balance
--   ('' when the team has none); then per usage key its value and its TTL in ms.
-- Reply: the number of keys written.
local ttl, n = ARGV[1], tonumber(ARGV[2])
local written = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  local hs = { 'HSET', KEYS[1] }
  for i = 3, 2 + 2 * n do hs[#hs + 1] = ARGV[i] end
  redis.call(unpack(hs))
  redis.call('PEXPIRE', KEYS[1], ttl)
  written = written + 1
end
local at = 3 + 2 * n
if ARGV[at] ~= '' and redis.call('SET', KEYS[2], ARGV[at], 'NX', 'PX', ttl) then
  written = written + 1
end
at = at + 1
for i = 3, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[at], 'NX', 'PX', ARGV[at + 1]) then
    written = written + 1
  end
  at = at + 2
end
return written
