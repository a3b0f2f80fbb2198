-- kvindex library: a segment or span field's value in the blocks hash (its Java types:
-- SegmentValue, and SegmentCodec reading it on the lookup path): slots of offset (1 byte), block
-- key (8), entries' length (2, big-endian), then the block's entries (block_value.lua's), in no
-- particular order. In a span, a slot whose entries are those of the slot before it has the length
-- SAME_AS_BEFORE_LEN and no entries. A segment or span that overflowed is OVERFLOWED (lookups then
-- read its blocks' fields).
-- LIBRARIES: block_value

local byte, sub, char, concat = string.byte, string.sub, string.char, table.concat

local SEGMENT_SLOT_HEADER = 11
local SAME_AS_BEFORE_LEN = 65535
local SAME_AS_BEFORE = char(255, 255)
local OVERFLOWED = 'O'

-- A slot's id: its block's offset from the head (a number) and its block key (8 bytes).
local function slotIdOf(offset, key)
  return char(offset) .. key
end

-- A slot id's offset (a number) and block key.
local function slotIdParts(id)
  return byte(id, 1), sub(id, 2)
end

-- The id of the slot whose header starts at byte i (its key starts at i + 1).
local function slotIdAt(v, i)
  return sub(v, i, i + 8)
end

-- A slot: its id (offset (1) and block key (8)), its entries' length (2 bytes), its entries.
local function encodeSlot(id, val)
  return id .. char((#val - #val % 256) / 256, #val % 256) .. val
end

-- The entries' length of the slot whose header starts at byte i (SAME_AS_BEFORE_LEN for a span's
-- slot that has the entries of the slot before it).
local function slotLength(v, i)
  local a, b = byte(v, i + 9, i + 10)
  return a * 256 + b
end

-- Where the slot whose header starts at byte i ends (the byte after its entries).
local function slotEnd(v, i)
  local a, b = byte(v, i + 9, i + 10)
  local len = a * 256 + b
  return i + SEGMENT_SLOT_HEADER + (len == SAME_AS_BEFORE_LEN and 0 or len)
end

-- The entries of the slot whose header starts at byte i, as written ('' for a span's slot that has
-- the entries of the slot before it).
local function slotEntries(v, i)
  local len = slotLength(v, i)
  if len == SAME_AS_BEFORE_LEN then return '' end
  return sub(v, i + SEGMENT_SLOT_HEADER, i + SEGMENT_SLOT_HEADER + len - 1)
end

-- Where a value's slots start (start -> true), and their count: one walk over the slot headers.
local function slotStarts(v)
  local isStart, count, n, i = {}, 0, #v, 1
  while i + SEGMENT_SLOT_HEADER - 1 <= n do
    count = count + 1
    isStart[i] = true
    local a, b = byte(v, i + 9, i + 10)
    local len = a * 256 + b
    i = i + SEGMENT_SLOT_HEADER + (len == SAME_AS_BEFORE_LEN and 0 or len)
  end
  return isStart, count
end

-- The most slots one group holds in a segment value: a full-attention segment keeps a sparse
-- group's slots beside its own (apply.lua, mergedInto), the sparse group g's at offsets from
-- 16 (g + 1), and its limit counts each group's apart. One walk over the slot headers.
local function mostSlotsOfOneGroup(v)
  local count, most, n, i = {}, 0, #v, 1
  while i + SEGMENT_SLOT_HEADER - 1 <= n do
    local offset = byte(v, i)
    local g = (offset - offset % 16) / 16
    local c = (count[g] or 0) + 1
    count[g] = c
    if c > most then most = c end
    i = slotEnd(v, i)
  end
  return most
end

-- A value without the entries of dead slots (dead[slot] true): nil when none is dead (nothing is
-- copied), else the new value ('' when no slot keeps an entry). A slot left with no entry goes; a
-- span's SAME_AS_BEFORE slot stays, as it is, while the slot before it keeps an entry, and goes
-- with it.
local function segmentWithout(v, dead)
  local n = #v
  local parts, np, i, beforeKept = nil, 0, 1, true
  while i + SEGMENT_SLOT_HEADER - 1 <= n do
    local from = i + SEGMENT_SLOT_HEADER
    local len = slotLength(v, i)
    local stop, kept
    if len == SAME_AS_BEFORE_LEN then
      stop = from
      if not beforeKept then kept = '' end
    else
      stop = from + len
      kept = entriesWithout(v, from, stop, dead)
    end
    beforeKept = kept ~= ''
    if kept then
      if not parts then
        parts = {}
        if i > 1 then
          np = 1
          parts[1] = sub(v, 1, i - 1)
        end
      end
      if kept ~= '' then
        np = np + 1
        parts[np] = encodeSlot(slotIdAt(v, i), kept)
      end
    elseif parts then
      np = np + 1
      parts[np] = sub(v, i, stop - 1)
    end
    i = stop
  end
  return parts and concat(parts)
end

-- The slots a value's entries name that named does not hold yet: added to it (slot -> true) and
-- to the list ids.
local function nameSegmentSlots(v, named, ids)
  local n, i = #v, 1
  while i + SEGMENT_SLOT_HEADER - 1 <= n do
    local stop = slotEnd(v, i)
    nameSlots(v, i + SEGMENT_SLOT_HEADER, stop, named, ids)
    i = stop
  end
end
