-- Admit a plan all or nothing (docs/bucket-math.md, "Admitting a plan").
-- KEYS[1..n]: bucket strings, request ops then token ops, plan order; when there is a hold
--   record, KEYS[n+1]: the record, KEYS[n+2]: its release tombstone.
-- ARGV[1]: the plan, packed (store.go appendPlan): '<BBdd' nreq, ntok, hold TTL ms, expiry margin ms,
--   then per op '<BBdB' kind, private (1/0), amount, nlimits, then per limit '<Bdd' period code,
--   capacity, refill/s.
-- ARGV[2]: the hold record to keep verbatim ('' for none; format in common.lua).
-- Reply: {admitted 1/0, now_us, refused op (1-based, 0 none), refused limit, refused level ('<d', '' none),
--         levels: '<d' per limit of every private op whose units stand, plan order,
--         and, when the spend preflight ran before (spendcache's preflight.lua), its verdict};
--        {-1, now_us} when the hold id was released already (the caller gave up on this admission
--        and end.lua left a tombstone) or is taken: nothing is written.
local plan, record = ARGV[1], ARGV[2]
local nreq, ntok, holdttl, margin, pos = sunpack('<BBdd', plan)
local nops = nreq + ntok
clock()
if record ~= '' and redis.call('EXISTS', KEYS[nops + 1], KEYS[nops + 2]) > 0 then
  return { -1, now }
end
opSlots()
local k = 0
for i = 1, nops do
  stands[i] = 0
  -- an op's limit count is its 11th byte; a two-limit op (minute and day)
  -- is read in one unpack
  local n = byte(plan, pos + 10)
  k0[i], nl[i] = k, n
  if n == 2 then
    local a, b = k + 1, k + 2
    kind[i], priv[i], amount[i], n, code[a], cap[a], rate[a], code[b], cap[b], rate[b], pos =
      sunpack('<BBdBBddBdd', plan, pos)
    k = b
  else
    kind[i], priv[i], amount[i], n, pos = sunpack('<BBdB', plan, pos)
    for _ = 1, n do
      k = k + 1
      code[k], cap[k], rate[k], pos = sunpack('<Bdd', plan, pos)
    end
  end
end
-- every bucket of the plan in one read
if nops > 0 then
  local stored = redis.call('MGET', unpack(KEYS, 1, nops))
  for i = 1, nops do decode(stored[i], KEYS[i], k0[i], nl[i]) end
end

-- first limit of op i that cannot cover the amount, 0 when all can. A token
-- op is also refused on a level at or below zero, so a zero-token hold never
-- rides on a spent or indebted bucket; request-count and concurrency ops
-- only need the level to cover their unit.
local function refuses(i)
  local a, tok, b = amount[i], kind[i] == 3, k0[i]
  for j = 1, nl[i] do
    local x = lv[b + j]
    if x < a or (tok and x <= 0) then return j end
  end
  return 0
end

local function take(i)
  local a, b = amount[i], k0[i]
  for kk = b + 1, b + nl[i] do lv[kk] = lv[kk] - a end
  stands[i] = 1
end

local function reply(admitted, ri, rj)
  local ref = ''
  if ri > 0 then ref = spack('<d', lv[k0[ri] + rj]) end
  local out = {}
  for i = 1, nops do
    if priv[i] == 1 and stands[i] == 1 then
      for kk = k0[i] + 1, k0[i] + nl[i] do out[#out + 1] = spack('<d', lv[kk]) end
    end
  end
  return { admitted, now, ri, rj, ref, concat(out), spendout }
end

-- Requests, all or nothing: a refusal writes nothing.
for i = 1, nreq do
  local j = refuses(i)
  if j > 0 then return reply(0, i, j) end
end
for i = 1, nreq do take(i) end

-- Tokens, all or nothing: a refusal keeps only the request-count units.
for i = nreq + 1, nops do
  local j = refuses(i)
  if j > 0 then
    for r = 1, nreq do
      if kind[r] == 1 then
        save(KEYS[r], k0[r], nl[r], margin, holdttl)
      else
        stands[r] = 0
      end
    end
    return reply(0, i, j)
  end
end
for i = nreq + 1, nops do take(i) end
for i = 1, nops do save(KEYS[i], k0[i], nl[i], margin, holdttl) end
if record ~= '' then
  redis.call('SET', KEYS[nops + 1], record, 'PX', fmt('%d', holdttl))
end
if spendhold then spendhold() end
return reply(1, 0, 0)
