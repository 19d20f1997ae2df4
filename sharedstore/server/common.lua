-- Shared by every script (prepended by scripts.go). Bucket math per
-- BUCKET_MATH.md, mirroring shared/bucket: a bucket never seen is full; every
-- touch refills continuously, capped at capacity; a clock that went backwards
-- refills nothing and keeps the later time. Times are Redis server TIME in
-- microseconds (exact in a Lua double until year 2255). Levels are stored with
-- %.17g so a float survives the round trip exactly.
-- A bucket is one hash per Op: fields l:<budget> (level) and t:<budget>
-- (last refill), one pair per Limit, so both periods sit in one slot.

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- load returns the refilled level and last time of every limit of a bucket.
local function load(key, limits, now)
  local fields = {}
  for j, l in ipairs(limits) do
    fields[2 * j - 1] = 'l:' .. l.budget
    fields[2 * j] = 't:' .. l.budget
  end
  local v = redis.call('HMGET', key, unpack(fields))
  local lv, last = {}, {}
  for j, l in ipairs(limits) do
    local level, t = tonumber(v[2 * j - 1]), tonumber(v[2 * j])
    if level == nil or t == nil then
      level, t = l.cap, now
    elseif now > t then
      if level < l.cap and l.rate > 0 then
        level = level + (now - t) / 1000000 * l.rate
      end
      if level > l.cap then level = l.cap end
      t = now
    end
    lv[j], last[j] = level, t
  end
  return lv, last
end

-- save writes a bucket back and lets it expire once every limit would be
-- full again (plus a margin): an absent bucket reads as full, so expiry
-- loses nothing. A level below zero (a debt) makes that time longer by the
-- debt's refill, so an indebted bucket outlives its debt. A limit that never refills and is not full (a concurrency
-- bucket with units held) keeps the bucket for the hold TTL after its last
-- touch, so it outlives every hold that could still give units back.
local function save(key, limits, lv, last, margin, keepms)
  local args = {}
  local ttl, keep = 0, false
  for j, l in ipairs(limits) do
    args[#args + 1] = 'l:' .. l.budget
    args[#args + 1] = string.format('%.17g', lv[j])
    args[#args + 1] = 't:' .. l.budget
    args[#args + 1] = string.format('%d', last[j])
    if lv[j] < l.cap then
      if l.rate > 0 then
        local ms = math.ceil((l.cap - lv[j]) / l.rate * 1000)
        if ms > ttl then ttl = ms end
      else
        keep = true
      end
    end
  end
  if keep and keepms > ttl then ttl = keepms end
  if ttl > 31622400000 then ttl = 31622400000 end
  redis.call('HSET', key, unpack(args))
  redis.call('PEXPIRE', key, ttl + margin)
end
