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
