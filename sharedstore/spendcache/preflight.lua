-- Spend preflight, run before the token admission in the same script (or
-- alone on a Redis Cluster). It writes only reservations: the call's own
-- (below) and the ending of expired ones (endhold, defined before it).
-- ARGV[3]: index b in KEYS of the team's policy hash; KEYS[b+1] is the
--   balance key, KEYS[b+2..b+6] the usage keys of the slots team_month,
--   api_key_day, api_key_month, user_day, user_month (a slot without an id
--   repeats the policy key and is never read). '' skips the preflight.
-- ARGV[4]: '1' when ARGV[15..26] carry figures just read from the ledger,
--   used for any key still absent (a closed period is never cached).
-- ARGV[5..9]: the filter's limit per slot ('' none); ARGV[10..14]: the
--   policy field per slot ('' when the call has no id for it);
--   ARGV[15..19]: the ledger's limits; ARGV[20]: '1' when the team has a
--   balance; ARGV[21..25]: the ledger's usage; ARGV[26]: its balance.
-- Every amount is a decimal integer string, compared as text: Lua numbers
-- are doubles and would round amounts above 2^53 nano-USD.
-- Early replies: {-2} a key is absent (nothing checked: load and retry);
--   {-3, out} refused. Otherwise spendout is the admission reply's 7th
--   element: {refused slot (1..5, 6 balance, 0 none), has balance, balance,
--   limit per slot, usage per slot} (false for none).
-- Reservations: ARGV[27] is the call's maximum cost ('0' reserves nothing:
--   the check-only rule), ARGV[28] its hold id, ARGV[29] how long (ms) a
--   reservation stands without its settlement or release. KEYS[b+7] is the
--   team's held hash (usage key -> nano-USD held on it), KEYS[b+8] its
--   holds hash (hold id -> amount and usage keys, '\n'-separated) and
--   KEYS[b+9] its expiry set (hold id scored by the ms it expires at).
--   A slot's usage is what is spent plus what is held; a call is refused
--   when nothing is left or its cost does not fit what is. spendhold, set
--   here, holds the cost once the admission commits (admit.lua calls it).
--   Expired reservations are given back first.
local spendout, spendhold
if ARGV[3] and ARGV[3] ~= '' then
  local function isint(s)
    return s == '0' or string.find(s, '^%-?[1-9]%d*$') ~= nil and #s <= 19
  end
  local function cmp(a, b)
    local na, nb = string.byte(a) == 45, string.byte(b) == 45
    if na ~= nb then return na and -1 or 1 end
    local r
    if #a ~= #b then
      r = #a < #b and -1 or 1
    elseif a == b then
      r = 0
    else
      r = a < b and -1 or 1
    end
    if na then r = -r end
    return r
  end
  local function num(key, v)
    if not isint(v) then error('spend cache key ' .. key .. ' does not hold an integer') end
    return v
  end
  local b, fb = tonumber(ARGV[3]), ARGV[4] == '1'
  local reserve, holdid, holdms = ARGV[27] or '0', ARGV[28] or '', tonumber(ARGV[29] or '0')
  local H, R, Z = KEYS[b + 7], KEYS[b + 8], KEYS[b + 9]
  local t = redis.call('TIME')
  local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- add: the sum of two decimal texts (|x| < 1e18) as text, exact above
  -- 2^53 (split at 1e9; a negative operand, only a corrupt counter, is
  -- added as a double)
  local function add(x, y)
    if string.byte(x) == 45 or string.byte(y) == 45 or (#x < 16 and #y < 16) then
      return string.format('%d', tonumber(x) + tonumber(y))
    end
    local function split(v)
      if #v <= 9 then return 0, tonumber(v) end
      return tonumber(string.sub(v, 1, -10)), tonumber(string.sub(v, -9))
    end
    local xh, xl = split(x)
    local yh, yl = split(y)
    local h, l = xh + yh, xl + yl
    if l >= 1e9 then h, l = h + 1, l - 1e9 end
    if h == 0 then return string.format('%d', l) end
    return string.format('%d%09d', h, l)
  end
  if holdid ~= '' then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', Z, '-inf', nowms, 'LIMIT', 0, 16)) do
      endhold(H, R, Z, id)
    end
  end
  local p = redis.call('HMGET', KEYS[b], '_', 'b',
    ARGV[10] ~= '' and ARGV[10] or '_', ARGV[11] ~= '' and ARGV[11] or '_', ARGV[12] ~= '' and ARGV[12] or '_',
    ARGV[13] ~= '' and ARGV[13] or '_', ARGV[14] ~= '' and ARGV[14] or '_')
  local loaded = p[1] ~= false
  if not loaded and not fb then return { -2 } end
  local lim, used = { false, false, false, false, false }, { false, false, false, false, false }
  local miss = false
  for i = 1, 5 do
    local l = ARGV[4 + i] ~= '' and ARGV[4 + i] or false
    local st = false
    if ARGV[9 + i] ~= '' then
      if loaded then
        st = p[2 + i] and num(KEYS[b], p[2 + i]) or false
      elseif ARGV[14 + i] ~= '' then
        st = ARGV[14 + i]
      end
    end
    -- both the filter's and the stored limit apply: the stricter counts
    if st and (not l or cmp(st, l) < 0) then l = st end
    lim[i] = l
    if l then
      local k = KEYS[b + 1 + i]
      local u = redis.call('GET', k)
      if u then
        used[i] = num(k, u)
      elseif fb then
        used[i] = ARGV[20 + i]
      else
        miss = true
      end
    end
  end
  local hasbal
  if loaded then hasbal = p[2] == '1' else hasbal = ARGV[20] == '1' end
  local bal = false
  if hasbal then
    local v = redis.call('GET', KEYS[b + 1])
    if v then
      bal = num(KEYS[b + 1], v)
    elseif fb then
      bal = ARGV[26]
    else
      miss = true
    end
  end
  if miss then return { -2 } end
  local heldf = {}
  for i = 1, 5 do
    if lim[i] then heldf[#heldf + 1] = KEYS[b + 1 + i] end
  end
  if #heldf > 0 then
    local h = redis.call('HMGET', H, unpack(heldf))
    local j = 0
    for i = 1, 5 do
      if lim[i] then
        j = j + 1
        if h[j] then used[i] = add(used[i], num(H, h[j])) end
      end
    end
  end
  local ref = 0
  if hasbal and cmp(bal, '0') <= 0 then
    ref = 6
  else
    -- months before days; within a period the key, the user, the team
    for _, i in ipairs({ 3, 5, 1, 2, 4 }) do
      if lim[i] and (cmp(used[i], lim[i]) >= 0 or reserve ~= '0' and cmp(add(used[i], reserve), lim[i]) > 0) then
        ref = i
        break
      end
    end
  end
  spendout = { ref, hasbal and 1 or 0, bal, lim[1], lim[2], lim[3], lim[4], lim[5],
    used[1], used[2], used[3], used[4], used[5] }
  if ref > 0 then return { -3, spendout } end
  if reserve ~= '0' and holdid ~= '' and #heldf > 0 then
    spendhold = function()
      for _, f in ipairs(heldf) do redis.call('HINCRBY', H, f, reserve) end
      redis.call('HSET', R, holdid, reserve .. '\n' .. table.concat(heldf, '\n'))
      redis.call('ZADD', Z, nowms + holdms, holdid)
      for _, k in ipairs({ H, R, Z }) do redis.call('PEXPIRE', k, holdms + 60000) end
    end
  end
end
