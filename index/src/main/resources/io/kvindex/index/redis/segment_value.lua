-- kvindex library: a segment or span field's value in the blocks hash (its Java types:
-- SegmentValue, and SegmentCodec reading it on the lookup path): slots of offset (1 byte), block
-- key (8), entries' length (2, big-endian), then the block's entries (block_value.lua's), in no
-- particular order. In a span, a slot whose entries are those of the slot before it has the length
-- SAME_AS_BEFORE_LEN and no entries. A segment or span that overflowed is OVERFLOWED (lookups then
-- read its blocks' fields).

local SEGMENT_SLOT_HEADER = 11
local SAME_AS_BEFORE_LEN = 65535
local SAME_AS_BEFORE = string.char(255, 255)
local OVERFLOWED = 'O'

-- A slot: its id (offset (1) and block key (8)), its entries' length (2 bytes), its entries.
local function encodeSlot(id, val)
  return id .. string.char((#val - #val % 256) / 256, #val % 256) .. val
end

-- The entries' length of the slot whose header starts at byte i (SAME_AS_BEFORE_LEN for a span's
-- slot that has the entries of the slot before it).
local function slotLength(v, i)
  local a, b = string.byte(v, i + 9, i + 10)
  return a * 256 + b
end
