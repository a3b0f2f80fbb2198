-- kvindex apply: one batch of one stream's events, atomically (see RedisPrefixIndex notes).
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 free, 6 dead, 7 lease, 8 tmap
-- ARGV: 1 stream field, 2 pod field, 3 rank (2 bytes), 4 seq, 5 fencing token, 6 pod ttl ms,
--       7 model scope (8 bytes), 8 the pod's holder field in blocks (its record's copy there),
--       9.. events (packed, see EventPacker)
local MAX_SLOT = 4095
local CHUNK = 512

local lease = redis.call('GET', KEYS[7])
if not lease or string.match(lease, '^(%d+):') ~= ARGV[5] then
  return {'FENCED', -1, 0, 0, 0}
end

local rec = redis.call('HGET', KEYS[2], ARGV[1])
local slot, wm = 0, nil
if rec then
  local s, w = string.match(rec, '^(%d+)|(%d*)$')
  slot = tonumber(s)
  if w ~= '' then wm = tonumber(w) end
end
local seq = tonumber(ARGV[4])
if wm then
  if seq <= wm then return {'DUPLICATE', wm, 0, 0, 0} end
  if seq > wm + 1 then return {'GAP', wm, 0, 0, 0} end
end

-- Check capacity before the first write: a script that fails half-way keeps its writes.
local needed, has = 0, slot ~= 0
for i = 9, #ARGV do
  local kind = string.sub(ARGV[i], 1, 1)
  if kind == 'C' then
    has = false
  elseif (kind == 'S' or kind == 'T') and not has then
    needed = needed + 1
    has = true
  end
end
if needed > 0 then
  local nextSlot = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
  if needed > redis.call('LLEN', KEYS[5]) + MAX_SLOT - nextSlot then
    return redis.error_reply('KVINDEX_SLOTS_FULL all ' .. MAX_SLOT ..
      ' holder slots of this index group are taken or await garbage collection;' ..
      ' run collectGarbage or configure more index groups')
  end
end

local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
local stored, removed, dropped = 0, 0, 0

local function retire()
  if slot ~= 0 then
    redis.call('HSET', KEYS[6], slot, pass)
    slot = 0
  end
  redis.call('UNLINK', KEYS[8])
end

local function ensureSlot()
  if slot == 0 then
    local s = redis.call('LPOP', KEYS[5])
    if s then slot = tonumber(s) else slot = redis.call('HINCRBY', KEYS[1], 'next', 1) end
  end
end

local function addTier(v, tier)
  local hi, lo = math.floor(slot / 16), (slot % 16) * 16
  if v then
    for k = 1, #v, 2 do
      local b1, b2 = string.byte(v, k, k + 1)
      if b1 == hi and b2 - b2 % 16 == lo then
        local nb2 = bit.bor(b2, tier)
        if nb2 == b2 then return nil end
        return string.sub(v, 1, k) .. string.char(nb2) .. string.sub(v, k + 2)
      end
    end
    return v .. string.char(hi, lo + tier)
  end
  return string.char(hi, lo + tier)
end

-- Returns the new value ('' when no entry is left) or nil when unchanged, and whether this
-- holder still has an entry.
local function clearTier(v, tier)
  if not v or slot == 0 then return nil, false end
  local hi, lo = math.floor(slot / 16), (slot % 16) * 16
  for k = 1, #v, 2 do
    local b1, b2 = string.byte(v, k, k + 1)
    if b1 == hi and b2 - b2 % 16 == lo then
      local nb2 = bit.band(b2, bit.bnot(tier))
      if nb2 == b2 then return nil, true end
      if nb2 % 16 == 0 then
        return string.sub(v, 1, k - 1) .. string.sub(v, k + 2), false
      end
      return string.sub(v, 1, k) .. string.char(nb2) .. string.sub(v, k + 2), true
    end
  end
  return nil, false
end

local function storeFields(fields, tier)
  for i = 1, #fields, CHUNK do
    local j = math.min(i + CHUNK - 1, #fields)
    local vals = redis.call('HMGET', KEYS[4], unpack(fields, i, j))
    local out = {}
    for k = 1, j - i + 1 do
      local nv = addTier(vals[k] or nil, tier)
      if nv then
        out[#out + 1] = fields[i + k - 1]
        out[#out + 1] = nv
      end
    end
    if #out > 0 then redis.call('HSET', KEYS[4], unpack(out)) end
  end
end

-- Clears the tier of each field; returns the indexes of fields this holder no longer has.
local function removeFields(fields, tier)
  local gone = {}
  for i = 1, #fields, CHUNK do
    local j = math.min(i + CHUNK - 1, #fields)
    local vals = redis.call('HMGET', KEYS[4], unpack(fields, i, j))
    local out, del = {}, {}
    for k = 1, j - i + 1 do
      local nv, still = clearTier(vals[k] or nil, tier)
      if nv == '' then
        del[#del + 1] = fields[i + k - 1]
      elseif nv then
        out[#out + 1] = fields[i + k - 1]
        out[#out + 1] = nv
      end
      if not still then gone[#gone + 1] = i + k - 1 end
    end
    if #out > 0 then redis.call('HSET', KEYS[4], unpack(out)) end
    if #del > 0 then redis.call('HDEL', KEYS[4], unpack(del)) end
  end
  return gone
end

local function tokenKey(prev, tokens)
  local h = redis.sha1hex(prev .. tokens)
  return (string.gsub(string.sub(h, 1, 16), '..', function(x)
    return string.char(tonumber(x, 16))
  end))
end

local function u32(s, at)
  local a, b, c, d = string.byte(s, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local scope = ARGV[7]
for i = 9, #ARGV do
  local ev = ARGV[i]
  local kind = string.sub(ev, 1, 1)
  if kind == 'C' then
    retire()
  else
    local tier = string.byte(ev, 2)
    local prefix = scope .. string.sub(ev, 3, 4)
    if kind == 'S' or kind == 'R' or kind == 'Q' then
      local n = (#ev - 4) / 8
      local fields, hashes = {}, {}
      for k = 1, n do hashes[k] = string.sub(ev, 5 + (k - 1) * 8, 4 + k * 8) end
      if kind == 'Q' then
        local cg = string.sub(ev, 3, 4)
        local mapped = {}
        for k = 1, n do mapped[k] = cg .. hashes[k] end
        local tks = {}
        for c = 1, n, CHUNK do
          local part = redis.call('HMGET', KEYS[8], unpack(mapped, c, math.min(c + CHUNK - 1, n)))
          for k = 1, #part do tks[c + k - 1] = part[k] end
        end
        local known = {}
        for k = 1, n do
          if tks[k] then
            fields[#fields + 1] = prefix .. tks[k]
            known[#known + 1] = mapped[k]
          else
            dropped = dropped + 1
          end
        end
        if #fields > 0 then
          local gone = removeFields(fields, tier)
          local unmap = {}
          for _, g in ipairs(gone) do unmap[#unmap + 1] = known[g] end
          for c = 1, #unmap, CHUNK do
            redis.call('HDEL', KEYS[8], unpack(unmap, c, math.min(c + CHUNK - 1, #unmap)))
          end
        end
        removed = removed + #fields
      else
        for k = 1, n do fields[k] = prefix .. hashes[k] end
        if kind == 'S' then
          ensureSlot()
          storeFields(fields, tier)
          stored = stored + n
        else
          removeFields(fields, tier)
          removed = removed + n
        end
      end
    elseif kind == 'T' then
      -- tier, cg, hasParent(1), parent(8), root(8), blockSize(4), n(4), hashes(8n), tokens(4*bs*n)
      local cg = string.sub(ev, 3, 4)
      local bs, n = u32(ev, 22), u32(ev, 26)
      local prev
      if string.byte(ev, 5) == 1 then
        prev = redis.call('HGET', KEYS[8], cg .. string.sub(ev, 6, 13))
      else
        prev = string.sub(ev, 14, 21)
      end
      if not prev then
        dropped = dropped + n
      else
        ensureSlot()
        local fields, maps = {}, {}
        local tokAt = 30 + 8 * n
        for k = 1, n do
          prev = tokenKey(prev, string.sub(ev, tokAt + (k - 1) * 4 * bs, tokAt + k * 4 * bs - 1))
          fields[k] = prefix .. prev
          maps[#maps + 1] = cg .. string.sub(ev, 30 + (k - 1) * 8, 29 + k * 8)
          maps[#maps + 1] = prev
        end
        storeFields(fields, tier)
        for k = 1, #maps, CHUNK * 2 do
          redis.call('HSET', KEYS[8], unpack(maps, k, math.min(k + CHUNK * 2 - 1, #maps)))
        end
        stored = stored + n
      end
    else
      return redis.error_reply('KVINDEX_BAD_EVENT unknown event kind ' .. kind)
    end
  end
end

-- Rewrite the pod record: deadline (8 bytes) then (slot, rank) pairs of 2 bytes each.
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[6])
local old = redis.call('HGET', KEYS[3], ARGV[2])
local parts, d = {}, deadline
for k = 8, 1, -1 do parts[k] = d % 256; d = math.floor(d / 256) end
local rec2 = {string.char(unpack(parts))}
if old then
  for k = 9, #old, 4 do
    if string.sub(old, k + 2, k + 3) ~= ARGV[3] then rec2[#rec2 + 1] = string.sub(old, k, k + 3) end
  end
end
if slot ~= 0 then rec2[#rec2 + 1] = string.char(math.floor(slot / 256), slot % 256) .. ARGV[3] end
rec2 = table.concat(rec2)
redis.call('HSET', KEYS[3], ARGV[2], rec2)
redis.call('HSET', KEYS[4], ARGV[8], rec2)
-- Routers cache pod records and trust them while this counter stands still (see RedisLookups).
if string.sub(old or '', 9) ~= string.sub(rec2, 9) then
  redis.call('HINCRBY', KEYS[4], 'kvindex/slots-generation', 1)
end
redis.call('HSET', KEYS[2], ARGV[1], slot .. '|' .. string.format('%d', seq))
return {'APPLIED', seq, stored, removed, dropped}
