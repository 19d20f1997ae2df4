-- Shared by every script (prepended by scripts.go). Bucket math per
-- docs/bucket-math.md, mirroring shared/bucket: a bucket never seen is full; every
-- touch refills continuously, capped at capacity; a clock that went backwards
-- refills nothing and keeps the later time. Times are Redis server TIME in
-- microseconds (exact in a Lua double until year 2255).
--
-- A bucket is one string per Op (docs/redis-layout.md): per Limit '<Bdd'
-- period code (shared/limit.Period), level, last refill (µs), so both
-- periods sit in one slot, one MGET reads every bucket of a plan and one
-- SET … PX writes each back with its expiry.
--
-- Cost matters more than elegance here: every admission runs this for each
-- op. Every number travels and is stored as a little-endian double
-- (struct.unpack / struct.pack): no decimal text is parsed or formatted, no
-- hash field is read by name.

-- The library functions every script uses, as locals. init fills them: a
-- script calls it first, and the function library (library.go) on its first
-- call, because a library's body runs where only redis.register_function is
-- in reach and the Lua libraries are not.
local unpack, byte, fmt, ceil, concat, sunpack, spack, tonumber
local function init()
  unpack, byte, fmt, ceil, concat = _G.unpack, string.byte, string.format, math.ceil, table.concat
  sunpack, spack, tonumber = struct.unpack, struct.pack, _G.tonumber
end

local now
local function clock()
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Limits of the ops a script touches, in flat arrays (index k): period
-- code, capacity, refill per second, level, last refill. Each starts with
-- 16 array slots (a constructor sizes the table once; filling an empty one
-- grows it four times).
local function slots()
  return { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
end
local code, cap, rate, lv, last = slots(), slots(), slots(), slots(), slots()

-- Ops of an admission's plan (admit.lua), in flat arrays (index i): kind,
-- private (1/0), amount, index before its first limit, limit count, and
-- whether its units stand (1). opSlots makes them on first use: on every
-- call of a script, once per Redis process in the function library, where
-- making six tables was a twentieth of an admission. Every call writes the
-- entries of its own ops before reading them.
local kind, priv, amount, k0, nl, stands
local function opSlots()
  if not kind then
    kind, priv, amount, k0, nl, stands = slots(), slots(), slots(), slots(), slots(), slots()
  end
end

-- Period names of the hash layout written before this one (fields
-- l:<name> and t:<name>), by code and code by name.
local pname = { 'second', 'minute', 'day', 'concurrent' }
local pcode = { second = 1, minute = 2, day = 3, concurrent = 4 }

-- refill brings limit k up to now from its stored level and time (nil:
-- absent).
local function refill(k, level, t)
  local c = cap[k]
  if not level or not t then
    lv[k], last[k] = c, now
  elseif now > t then
    local r = rate[k]
    if level < c and r > 0 then
      level = level + (now - t) / 1000000 * r
    end
    if level > c then level = c end
    lv[k], last[k] = level, now
  else
    lv[k], last[k] = level, t
  end
end

-- legacy reads a bucket that is absent as a string: either never seen (or
-- expired), or a hash of the layout before this one, which an upgrade must
-- not forget (a day budget would start over). One HMGET, only for a bucket
-- that is not there.
local function legacy(key, k0, n)
  local f = {}
  for j = 1, n do
    local name = pname[code[k0 + j]] or '?'
    f[2 * j - 1], f[2 * j] = 'l:' .. name, 't:' .. name
  end
  local v = redis.call('HMGET', key, unpack(f))
  for j = 1, n do
    refill(k0 + j, v[2 * j - 1] and tonumber(v[2 * j - 1]), v[2 * j] and tonumber(v[2 * j]))
  end
end

-- decode reads limits k0+1 .. k0+n of one bucket from its stored string v
-- (false: absent). The stored periods are matched by code, so a reload that
-- added, removed or reordered periods reads each one it kept.
local function decode(v, key, k0, n)
  if not v then return legacy(key, k0, n) end
  local a = k0 + 1
  if n == 2 and #v == 34 then
    local c1, l1, t1, c2, l2, t2 = sunpack('<BddBdd', v)
    if c1 == code[a] and c2 == code[a + 1] then
      refill(a, l1, t1)
      refill(a + 1, l2, t2)
      return
    end
  elseif n == 1 and #v == 17 then
    local c1, l1, t1 = sunpack('<Bdd', v)
    if c1 == code[a] then
      refill(a, l1, t1)
      return
    end
  end
  local sl, st, pos = {}, {}, 1
  while pos + 16 <= #v do
    local c, l, t
    c, l, t, pos = sunpack('<Bdd', v, pos)
    sl[c], st[c] = l, t
  end
  for k = a, k0 + n do refill(k, sl[code[k]], st[code[k]]) end
end

-- save writes limits k0+1 .. k0+n back and lets the bucket expire once
-- every limit would be full again, plus the margin: an absent bucket reads
-- as full, so expiry loses nothing. A level below zero (a debt) makes that
-- time longer by the debt's refill, so an indebted bucket outlives its
-- debt. A limit that never refills and is not full (a concurrency bucket
-- with units held) keeps the bucket for the hold TTL after its last touch,
-- so it outlives every hold that could still give units back. SET … PX
-- sets the value and its deadline in one command.
local function save(key, k0, n, margin, keepms)
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
  local a, v = k0 + 1, nil
  if n == 2 then
    v = spack('<BddBdd', code[a], lv[a], last[a], code[a + 1], lv[a + 1], last[a + 1])
  elseif n == 1 then
    v = spack('<Bdd', code[a], lv[a], last[a])
  else
    local parts = {}
    for k = a, k0 + n do parts[#parts + 1] = spack('<Bdd', code[k], lv[k], last[k]) end
    v = concat(parts)
  end
  -- integer text: a Lua number argument would be formatted with %.14g
  redis.call('SET', key, v, 'PX', fmt('%d', ttl + margin))
end

-- A hold record, written by the service (store.go appendRecord) and kept
-- verbatim: '<BB' 2 + skip-overage flag and entry count, then per entry
-- '<Hc0BdB' bucket key, kind, amount, limit count, then per limit '<Bdd'
-- period code, capacity, refill per second.
-- readRecord fills the flat limit arrays and returns the entries. Records
-- of earlier layouts (in flight across an upgrade) are read too.
local function readRecord(rec)
  local first = byte(rec, 1)
  local entries, k = {}, 0
  if first == 91 then
    -- '[': a JSON record written before the packed layouts, admitted under
    -- the rule of its time (an overage the bucket cannot cover is skipped)
    for i, e in ipairs(cjson.decode(rec)) do
      entries[i] = { key = e.k, kind = e.c, amount = tonumber(e.a), k0 = k, n = #e.l }
      for _, l in ipairs(e.l) do
        k = k + 1
        code[k], cap[k], rate[k] = pcode[l[1]] or 0, tonumber(l[2]), tonumber(l[3])
      end
    end
    return true, entries
  end
  local flag, ne, pos = sunpack('<BB', rec)
  for i = 1, ne do
    local key, kind, amount, n
    key, kind, amount, n, pos = sunpack('<Hc0BdB', rec, pos)
    entries[i] = { key = key, kind = kind, amount = amount, k0 = k, n = n }
    for _ = 1, n do
      k = k + 1
      if flag >= 2 then
        code[k], cap[k], rate[k], pos = sunpack('<Bdd', rec, pos)
      else
        -- flag 0/1: the first packed layout named each limit by its hash
        -- fields (l:<name>, t:<name>)
        local lf, tf
        lf, tf, cap[k], rate[k], pos = sunpack('<Bc0Bc0dd', rec, pos)
        code[k] = pcode[lf:sub(3)] or 0
      end
    end
  end
  return flag % 2 == 1, entries
end

-- loadAll reads the buckets of entries (readRecord's) with one MGET.
local function loadAll(entries)
  local keys = {}
  for i, e in ipairs(entries) do keys[i] = e.key end
  if #keys == 0 then return end
  local v = redis.call('MGET', unpack(keys))
  for i, e in ipairs(entries) do decode(v[i], e.key, e.k0, e.n) end
end
