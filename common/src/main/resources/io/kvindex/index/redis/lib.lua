-- kvindex script library, prepended to every index script when it is loaded (see Scripts), so
-- each helper exists once. Pod records are a deadline (ms, 8 bytes big-endian) then (slot u16,
-- rank u16) pairs; stream records are "<slot>|<watermark>"; leases are "token:owner". A local
-- function costs nothing until called.

-- Redis's clock in ms.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A deadline (ms) as the 8 bytes a pod record starts with.
local function encodeDeadline(ms)
  local parts = {}
  for k = 8, 1, -1 do
    parts[k] = ms % 256
    ms = math.floor(ms / 256)
  end
  return string.char(unpack(parts))
end

-- The deadline a pod record starts with, or nil for a missing or cut-short record.
local function decodeDeadline(rec)
  if not rec then return nil end
  local a, b, c, d, e, f, g, h = string.byte(rec, 1, 8)
  if not h then return nil end
  return ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h
end

-- Whether the lease key holds exactly this lease ("token:owner"): token and owner both, so an old
-- owner and a new one never both pass even if a lost index handed out the same token twice.
local function holdsLease(leaseKey, lease)
  return redis.call('GET', leaseKey) == lease
end

-- Whether the group's epoch (meta field 'epoch', created by init.lua) is the one the caller last
-- saw: after a FLUSHALL or a restart without persistence it is gone or new.
local function sameEpoch(metaKey, epoch)
  return redis.call('HGET', metaKey, 'epoch') == epoch
end

-- The history of the data this node serves: its replication id, which a promoted replica
-- changes. Read here, in the script, so that a failover between a caller's read and the script's
-- run cannot go unseen.
local function nodeHistory()
  return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
end

-- This process: its run id, new for every redis-server process (a restart, a failover). HSCAN
-- cursors only mean something to the process that issued them.
local function processId()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
end

-- A stream record's slot (0 for none), watermark (nil for none), watermark as written (''), and
-- the batch being applied in chunks, if any: its sequence, the chunks done, and whether they ended
-- in a dropped token store (see apply.lua).
local function parseStream(rec)
  if not rec then return 0, nil, '' end
  local s, w, rest = string.match(rec, '^(%d+)|(%d*)(.*)$')
  local ps, pc, tail = string.match(rest, '^|(%d+):(%d+)(:?x?)$')
  return tonumber(s), tonumber(w), w, tonumber(ps), tonumber(pc), tail == ':x'
end

-- A pod record's (slot, rank) pairs without those of one rank (2 bytes).
local function pairsWithout(rec, rank)
  local kept = {}
  if rec then
    for k = 9, #rec, 4 do
      if string.sub(rec, k + 2, k + 3) ~= rank then kept[#kept + 1] = string.sub(rec, k, k + 3) end
    end
  end
  return table.concat(kept)
end

-- Moves the group's slots generation, and records beside it the node history it moved on, so that
-- a router that cached records at generation g on one node history never mistakes the same number
-- reached again on another (a failover to a replica that missed some writes) for no change.
local function moveSlotsGeneration(blocksKey)
  redis.call('HINCRBY', blocksKey, 'kvindex/slots-generation', 1)
  redis.call('HSET', blocksKey, 'kvindex/node', nodeHistory())
end

-- Writes a pod record and its copy in the blocks hash in one go. Routers cache pod records and
-- trust them while the group's slots generation stands still, so a change to the slots a record
-- lists moves it (see RedisLookups). old: the record before (nil for none); rec: nil deletes it.
local function writePodRecord(podsKey, blocksKey, podField, holderField, old, rec)
  if rec then
    redis.call('HSET', podsKey, podField, rec)
    redis.call('HSET', blocksKey, holderField, rec)
  else
    redis.call('HDEL', podsKey, podField)
    redis.call('HDEL', blocksKey, holderField)
  end
  if string.sub(old or '', 9) ~= string.sub(rec or '', 9) then
    moveSlotsGeneration(blocksKey)
  end
end

-- HMGET, HSET and HDEL of any number of fields, in chunks: Lua unpacks at most about 8000 values
-- into one call, and a big batch or a GC step at its largest budget has more.
local UNPACK_CHUNK = 512

local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, UNPACK_CHUNK do
    local last = math.min(i + UNPACK_CHUNK - 1, #fields)
    local part = redis.call('HMGET', key, unpack(fields, i, last))
    for k = 1, #part do out[i + k - 1] = part[k] or nil end
  end
  return out
end

-- pairs: field, value, field, value...
local function hset(key, pairs)
  for i = 1, #pairs, UNPACK_CHUNK * 2 do
    redis.call('HSET', key, unpack(pairs, i, math.min(i + UNPACK_CHUNK * 2 - 1, #pairs)))
  end
end

local function hdel(key, fields)
  for i = 1, #fields, UNPACK_CHUNK do
    redis.call('HDEL', key, unpack(fields, i, math.min(i + UNPACK_CHUNK - 1, #fields)))
  end
end
