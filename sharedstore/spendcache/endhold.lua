-- endhold: end a team's spend reservation id, exactly once. H is the
-- team's held hash (the amount held per usage field), R its holds hash
-- (per hold id: the amount, then each field it holds, one a line) and Z
-- its expiry set; the hold's entry goes in the same script, so a second
-- end gives nothing back. Returns 1 when a reservation ended now, else 0.
-- Every spend script that ends a hold starts with this text.
local function endhold(H, R, Z, id)
  local rec = redis.call('HGET', R, id)
  redis.call('ZREM', Z, id)
  if not rec then return 0 end
  local amount
  for f in string.gmatch(rec, '[^\n]+') do
    if not amount then
      amount = f
    elseif redis.call('HINCRBY', H, f, '-' .. amount) <= 0 then
      redis.call('HDEL', H, f)
    end
  end
  redis.call('HDEL', R, id)
  return 1
end
