-- Outbox remove: forget records the ledger now holds, taking their
-- estimates off the sums. A record already removed (by another drain) is
-- skipped, so its estimate is never taken off twice.
-- KEYS: as outbox_add.lua. ARGV: per record its hold id, its estimate
--   negated ('-123', so Lua never formats a number), the number n of its
--   counter fields, then the n fields.
-- Reply: the records still in the outbox.
local i = 1
while i <= #ARGV do
  local id, neg, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  redis.call('ZREM', KEYS[2], id)
  if redis.call('HDEL', KEYS[1], id) == 1 then
    redis.call('HINCRBY', KEYS[3], '_n', -1)
    redis.call('HINCRBY', KEYS[3], '_all', neg)
    for j = i + 3, i + 2 + n do
      if redis.call('HINCRBY', KEYS[3], ARGV[j], neg) == 0 then
        redis.call('HDEL', KEYS[3], ARGV[j])
      end
    end
  end
  i = i + 3 + n
end
local left = redis.call('HLEN', KEYS[1])
if left == 0 then
  redis.call('DEL', KEYS[2], KEYS[3])
end
return left
