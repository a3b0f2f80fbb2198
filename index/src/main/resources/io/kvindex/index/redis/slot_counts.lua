-- kvindex library: the counts hash of a group (its Java type: SlotCounts): per holder slot, its
-- entries in the blocks hash ("<slot>:blocks") and those holding each tier ("<slot>:gpu",
-- "<slot>:cpu", "<slot>:storage", "<slot>:other"), and the segments that overflowed
-- (OVERFLOWED_SEGMENTS), each a decimal number that HINCRBY moves.

-- A slot's counts in order (entries, then per tier), COUNT_INDEX[tier bit] naming a tier's.
local COUNT_NAMES = {'blocks', 'gpu', 'cpu', 'storage', 'other'}
local COUNT_INDEX = {[1] = 2, [2] = 3, [4] = 4, [8] = 5}
local OVERFLOWED_SEGMENTS = 'overflowed-segments'

-- The field of a slot's k-th count (COUNT_NAMES[k]).
local function countField(slot, k)
  return slot .. ':' .. COUNT_NAMES[k]
end

-- Every count field of a slot, in COUNT_NAMES order.
local function countFields(slot)
  local out = {}
  for k = 1, #COUNT_NAMES do out[k] = countField(slot, k) end
  return out
end

-- A slot's count changes, all 0 (COUNT_NAMES order).
local function noCounts()
  return {0, 0, 0, 0, 0}
end

-- Adds d to the count changes c (COUNT_NAMES order) for one entry holding the tier bits tiers: to
-- its entries, and to each tier's.
local function countEntry(c, tiers, d)
  c[1] = c[1] + d
  local b = 1
  while b <= tiers do
    if tiers % (b + b) >= b then
      local k = COUNT_INDEX[b]
      c[k] = c[k] + d
    end
    b = b + b
  end
end

-- Writes count changes (slot -> changes in COUNT_NAMES order) to the counts hash, one HINCRBY per
-- count that moved.
local function writeCountChanges(countsKey, changes)
  for s, c in pairs(changes) do
    for k = 1, #COUNT_NAMES do
      if c[k] ~= 0 then redis.call('HINCRBY', countsKey, countField(s, k), c[k]) end
    end
  end
end
