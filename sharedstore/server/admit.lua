-- Admit a plan all or nothing (BUCKET_MATH.md "Admit a Plan").
-- KEYS[1..n]: bucket hashes, request ops then token ops, plan order; when there is a hold
--   record, KEYS[n+1]: the record, KEYS[n+2]: its release tombstone.
-- ARGV: nreq, ntok, hold TTL ms, expiry margin ms, hold record (JSON, '' for none),
--       then per op: kind, amount, private (1/0), nlimits, then per limit: budget, capacity, refill/s.
-- Reply: {admitted 1/0, now_us, refused op (1-based, 0 none), refused limit, refused level,
--         then one level per limit of every op: the standing level of a private op, '' otherwise};
--        {-1, now_us, 0, 0, ''} when the hold id was released already (the caller gave up on
--        this admission and end.lua left a tombstone) or is taken: nothing is written.
local nreq, ntok = tonumber(ARGV[1]), tonumber(ARGV[2])
local holdttl, margin, record = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local now = now_us()
if record ~= '' and redis.call('EXISTS', KEYS[nreq + ntok + 1], KEYS[nreq + ntok + 2]) > 0 then
  return { -1, string.format('%d', now), 0, 0, '' }
end
local ops, a = {}, 6
for i = 1, nreq + ntok do
  local op = { key = KEYS[i], kind = tonumber(ARGV[a]), amount = tonumber(ARGV[a + 1]),
    private = ARGV[a + 2] == '1', limits = {} }
  local nl = tonumber(ARGV[a + 3])
  a = a + 4
  for j = 1, nl do
    op.limits[j] = { budget = ARGV[a], cap = tonumber(ARGV[a + 1]), rate = tonumber(ARGV[a + 2]) }
    a = a + 3
  end
  op.lv, op.last = load(op.key, op.limits, now)
  ops[i] = op
end

-- first limit that cannot cover the amount, 0 when all can. A token op is
-- also refused on a level at or below zero, so a zero-token hold never rides
-- on a spent or indebted bucket; request-count and concurrency ops only need
-- the level to cover their unit.
local function refuses(op)
  for j = 1, #op.limits do
    local lv = op.lv[j]
    if lv < op.amount or (op.kind == 3 and lv <= 0) then return j end
  end
  return 0
end

local function take(op)
  for j = 1, #op.limits do op.lv[j] = op.lv[j] - op.amount end
  op.stands = true
end

local function reply(admitted, ri, rj)
  local out = { admitted, string.format('%d', now), ri, rj, '' }
  if ri > 0 then out[5] = string.format('%.17g', ops[ri].lv[rj]) end
  for _, op in ipairs(ops) do
    for j = 1, #op.limits do
      if op.private and op.stands then
        out[#out + 1] = string.format('%.17g', op.lv[j])
      else
        out[#out + 1] = ''
      end
    end
  end
  return out
end

-- Requests, all or nothing: a refusal writes nothing.
for i = 1, nreq do
  local j = refuses(ops[i])
  if j > 0 then return reply(0, i, j) end
end
for i = 1, nreq do take(ops[i]) end

-- Tokens, all or nothing: a refusal keeps only the request-count units.
for i = nreq + 1, nreq + ntok do
  local j = refuses(ops[i])
  if j > 0 then
    for k = 1, nreq do
      local op = ops[k]
      if op.kind == 1 then
        save(op.key, op.limits, op.lv, op.last, margin, holdttl)
      else
        op.stands = false
      end
    end
    return reply(0, i, j)
  end
end
for i = nreq + 1, nreq + ntok do take(ops[i]) end
for _, op in ipairs(ops) do save(op.key, op.limits, op.lv, op.last, margin, holdttl) end
if record ~= '' then
  redis.call('SET', KEYS[nreq + ntok + 1], record, 'PX', holdttl)
end
return reply(1, 0, 0)
