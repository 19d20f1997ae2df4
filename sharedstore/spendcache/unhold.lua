-- Unhold: end a spend reservation (its call settled, was released, or its
-- admission refused after the preflight held it), exactly once: the hold's
-- entry is deleted in the same script, so a retry gives nothing back twice.
-- KEYS[1]: the team's held hash, KEYS[2]: its holds hash, KEYS[3]: its
--   expiry set (see preflight.lua). ARGV[1]: the hold id.
-- Reply: 1 when a reservation was ended now, 0 when there was none.
local rec = redis.call('HGET', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if not rec then return 0 end
local amount
for f in string.gmatch(rec, '[^\n]+') do
  if not amount then
    amount = f
  elseif redis.call('HINCRBY', KEYS[1], f, '-' .. amount) <= 0 then
    redis.call('HDEL', KEYS[1], f)
  end
end
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
