-- Shared by every script (prepended by scripts.go). Bucket math per
-- docs/bucket-math.md, mirroring shared/bucket: a bucket never seen is full; every
-- touch refills continuously, capped at capacity; a clock that went backwards
-- refills nothing and keeps the later time. Times are Redis server TIME in
-- microseconds (exact in a Lua double until year 2255).
--
-- A bucket is one hash per Op: fields l:<budget> (level, text) and
-- t:<budget> (last refill, integer text), one pair per Limit, so both
-- periods sit in one slot and an operator can read them with redis-cli;
-- field x is the expiry deadline last set (see save).
--
-- Cost matters more than elegance here: every admission runs this for each
-- op. Numbers from the service arrive packed as little-endian doubles
-- (struct.unpack, no string-to-number parsing); a level is written as an
-- integer when it is one (the usual case for a full or near-full bucket) and
-- with %.17g otherwise, so a float survives the round trip exactly; the
-- t: fields of one script all carry the same text, parsed once.

local unpack, byte, fmt, ceil = unpack, string.byte, string.format, math.ceil
local sunpack, spack, tonumber = struct.unpack, struct.pack, tonumber

local now, nowstr
local function clock()
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  nowstr = fmt('%d', now)
end

-- A level's text: exact, and cheap when integral.
local function lvstr(x)
  -- x % 1 is VM arithmetic; math.floor would be a C call per level
  if x % 1 == 0 and x > -9e15 and x < 9e15 then return fmt('%d', x) end
  return fmt('%.17g', x)
end

-- Limits of the ops a script touches, in flat arrays (index k): field
-- names, capacity, refill per second, level, last refill and its text.
-- Each starts with 16 array slots (a constructor sizes the table once;
-- filling an empty one grows it four times).
local function slots()
  return { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
end
local lf, tf, cap, rate, lv, last, lasts = slots(), slots(), slots(), slots(), slots(), slots(), slots()
local tcache = {}

-- refill brings limit k up to now from its stored text (false: absent).
local function refill(k, s, ts)
  local c = cap[k]
  if not s or not ts then
    lv[k], last[k], lasts[k] = c, now, nowstr
    return
  end
  local level, t = tonumber(s), tcache[ts]
  if not t then
    t = tonumber(ts)
    tcache[ts] = t
  end
  if level == nil or t == nil then
    lv[k], last[k], lasts[k] = c, now, nowstr
  elseif now > t then
    local r = rate[k]
    if level < c and r > 0 then
      level = level + (now - t) / 1000000 * r
    end
    if level > c then level = c end
    lv[k], last[k], lasts[k] = level, now, nowstr
  else
    lv[k], last[k], lasts[k] = level, t, ts
  end
end

-- load reads and refills limits k0+1 .. k0+n of the bucket at key and
-- returns the bucket's expiry deadline (field x, Unix ms; nil when unknown).
-- One and two limits (every plan the filter makes) call HMGET without
-- building an argument table.
local function load(key, k0, n)
  local a, b = k0 + 1, k0 + 2
  if n == 2 then
    local v = redis.call('HMGET', key, lf[a], tf[a], lf[b], tf[b], 'x')
    refill(a, v[1], v[2])
    refill(b, v[3], v[4])
    return v[5] and tonumber(v[5])
  elseif n == 1 then
    local v = redis.call('HMGET', key, lf[a], tf[a], 'x')
    refill(a, v[1], v[2])
    return v[3] and tonumber(v[3])
  end
  local f = {}
  for j = 1, n do
    f[2 * j - 1], f[2 * j] = lf[k0 + j], tf[k0 + j]
  end
  f[2 * n + 1] = 'x'
  local v = redis.call('HMGET', key, unpack(f))
  for j = 1, n do refill(k0 + j, v[2 * j - 1], v[2 * j]) end
  return v[2 * n + 1] and tonumber(v[2 * n + 1])
end

-- save writes limits k0+1 .. k0+n back and lets the bucket expire once
-- every limit would be full again, plus between half the margin and the
-- whole margin: an absent bucket reads as full, so expiry loses nothing. A
-- level below zero (a debt) makes that time longer by the debt's refill, so
-- an indebted bucket outlives its debt. A limit that never refills and is
-- not full (a concurrency bucket with units held) keeps the bucket for the
-- hold TTL after its last touch, so it outlives every hold that could still
-- give units back.
--
-- The deadline set last is kept in field x (Unix ms), and PEXPIRE is sent
-- only when it falls outside that window: a busy bucket, refilled to near
-- full on every touch, would otherwise pay a PEXPIRE per admission for a
-- deadline that moved by microseconds.
local function save(key, k0, n, margin, keepms, x)
  local ttl, keep = 0, false
  for k = k0 + 1, k0 + n do
    local lvl, c = lv[k], cap[k]
    if lvl < c then
      local r = rate[k]
      if r > 0 then
        local ms = ceil((c - lvl) / r * 1000)
        if ms > ttl then ttl = ms end
      else
        keep = true
      end
    end
  end
  if keep and keepms > ttl then ttl = keepms end
  if ttl > 31622400000 then ttl = 31622400000 end
  local nowms = (now - now % 1000) / 1000
  local full = nowms + ttl
  local expire = not x or x < full + margin / 2 or x > full + margin
  local a, b = k0 + 1, k0 + 2
  if expire then
    local xs = fmt('%d', full + margin)
    if n == 2 then
      redis.call('HSET', key, lf[a], lvstr(lv[a]), tf[a], lasts[a], lf[b], lvstr(lv[b]), tf[b], lasts[b], 'x', xs)
    elseif n == 1 then
      redis.call('HSET', key, lf[a], lvstr(lv[a]), tf[a], lasts[a], 'x', xs)
    else
      local args = {}
      for j = 1, n do
        local k = k0 + j
        args[4 * j - 3], args[4 * j - 2], args[4 * j - 1], args[4 * j] = lf[k], lvstr(lv[k]), tf[k], lasts[k]
      end
      args[4 * n + 1], args[4 * n + 2] = 'x', xs
      redis.call('HSET', key, unpack(args))
    end
    -- integer text: a Lua number argument would be formatted with %.17g
    redis.call('PEXPIRE', key, fmt('%d', ttl + margin))
    return
  end
  if n == 2 then
    redis.call('HSET', key, lf[a], lvstr(lv[a]), tf[a], lasts[a], lf[b], lvstr(lv[b]), tf[b], lasts[b])
  elseif n == 1 then
    redis.call('HSET', key, lf[a], lvstr(lv[a]), tf[a], lasts[a])
  else
    local args = {}
    for j = 1, n do
      local k = k0 + j
      args[4 * j - 3], args[4 * j - 2], args[4 * j - 1], args[4 * j] = lf[k], lvstr(lv[k]), tf[k], lasts[k]
    end
    redis.call('HSET', key, unpack(args))
  end
end

-- A hold record, written by the service (store.go appendRecord) and kept
-- verbatim: '<BB' skip-overage flag and entry count, then per entry
-- '<Hc0BdB' bucket key, kind, amount, limit count, then per limit
-- '<Bc0Bc0dd' level field, time field, capacity, refill per second.
-- readRecord fills the flat limit arrays and returns the entries.
local function readRecord(rec)
  if byte(rec, 1) == 91 then
    -- '[': a JSON record written before this layout, admitted under the
    -- rule of its time (an overage the bucket cannot cover is skipped)
    local entries, k = {}, 0
    for i, e in ipairs(cjson.decode(rec)) do
      entries[i] = { key = e.k, kind = e.c, amount = tonumber(e.a), k0 = k, n = #e.l }
      for _, l in ipairs(e.l) do
        k = k + 1
        lf[k], tf[k], cap[k], rate[k] = 'l:' .. l[1], 't:' .. l[1], tonumber(l[2]), tonumber(l[3])
      end
    end
    return true, entries
  end
  local skip, ne, pos = sunpack('<BB', rec)
  local entries, k = {}, 0
  for i = 1, ne do
    local key, kind, amount, n
    key, kind, amount, n, pos = sunpack('<Hc0BdB', rec, pos)
    entries[i] = { key = key, kind = kind, amount = amount, k0 = k, n = n }
    for j = 1, n do
      k = k + 1
      lf[k], tf[k], cap[k], rate[k], pos = sunpack('<Bc0Bc0dd', rec, pos)
    end
  end
  return skip == 1, entries
end
