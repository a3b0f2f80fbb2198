-- kvindex library: the pod record (its Java type: PodRecord), the value of a pod's field in its
-- group's pods hash and of its copy in the blocks hash (under the pod's holder field): the pod's
-- liveness deadline (ms, Redis's clock, 8 bytes big-endian), then one (slot u16, rank u16) pair,
-- big-endian, per stream of the pod whose entries lookups see.

local byte, sub, char, concat = string.byte, string.sub, string.char, table.concat

-- A deadline (ms) as the 8 bytes a pod record starts with.
local function encodeDeadline(ms)
  local parts = {}
  for k = 8, 1, -1 do
    parts[k] = ms % 256
    ms = math.floor(ms / 256)
  end
  return char(unpack(parts))
end

-- The deadline a pod record starts with, or nil for a missing or cut-short record.
local function decodeDeadline(rec)
  if not rec then return nil end
  local a, b, c, d, e, f, g, h = byte(rec, 1, 8)
  if not h then return nil end
  return ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h
end

-- A record's deadline as stored (its first 8 bytes).
local function podDeadlineBytes(rec)
  return sub(rec, 1, 8)
end

-- A record's (slot, rank) pairs as stored ('' for none, or for no record).
local function podPairs(rec)
  return sub(rec or '', 9)
end

-- The pair of a slot (a number) and a rank (its 2 bytes).
local function podPair(slot, rank)
  return char(math.floor(slot / 256), slot % 256) .. rank
end

-- Whether a record lists a pair.
local function podLists(rec, pair)
  for k = 9, #rec, 4 do
    if sub(rec, k, k + 3) == pair then return true end
  end
  return false
end

-- A pod record's (slot, rank) pairs without those of one rank (2 bytes).
local function pairsWithout(rec, rank)
  local kept = {}
  if rec then
    for k = 9, #rec, 4 do
      if sub(rec, k + 2, k + 3) ~= rank then kept[#kept + 1] = sub(rec, k, k + 3) end
    end
  end
  return concat(kept)
end

-- Adds the slots a record lists (slot -> true) to set; returns whether it lists any.
local function podSlotsInto(rec, set)
  local any = false
  for k = 9, #rec, 4 do
    local s1, s2 = byte(rec, k, k + 1)
    set[s1 * 256 + s2] = true
    any = true
  end
  return any
end

-- Moves the group's slots generation. The node history beside it ('kvindex/node') moves only with
-- adoptNode, which changes the epoch too: a router that cached records at generation g never
-- mistakes the same number reached again on another node history for no change.
local function moveSlotsGeneration(blocksKey)
  redis.call('HINCRBY', blocksKey, 'kvindex/slots-generation', 1)
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
  if podPairs(old) ~= podPairs(rec) then
    moveSlotsGeneration(blocksKey)
  end
end
