-- Outbox add: keep a settlement's record the ledger could not take, once
-- per hold id, and add its estimate to the outbox's sums.
-- KEYS[1]: the records hash (hold id -> record), KEYS[2]: the order zset
--   (hold id scored by arrival), KEYS[3]: the sums hash ('_seq' arrivals,
--   '_n' records, '_all' their estimates, one field per counter).
-- ARGV[1]: the hold id, ARGV[2]: the record, ARGV[3]: its estimate
--   (nano-USD), ARGV[4..]: the counter fields it adds to.
-- Reply: 1 when the record is new, 0 when the outbox already held it.
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
local seq = redis.call('HINCRBY', KEYS[3], '_seq', 1)
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('HINCRBY', KEYS[3], '_n', 1)
redis.call('HINCRBY', KEYS[3], '_all', ARGV[3])
for i = 4, #ARGV do
  redis.call('HINCRBY', KEYS[3], ARGV[i], ARGV[3])
end
return 1
