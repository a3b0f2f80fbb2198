-- kvindex library: a block field's value in the blocks hash (its Java type: BlockValue): the
-- block's locator once its chain position is known (LOCATOR_LEN bytes: its head's key (8), then its
-- position in the chain (3, big-endian); so a located value has odd length), then its entries of 2
-- bytes each: holder slot (12 bits) then tiers (4 bits: GPU 1, CPU 2, STORAGE 4, OTHER 8). A
-- segment's or span's slot (segment_value.lua) holds entries of the same shape.
-- Hot loops (gc.lua, apply.lua's dead-slot walks) take an entry's slot with the arithmetic of
-- entrySlot written out, as a call per entry costs there; this is its definition.

local LOCATOR_LEN = 11

-- Where a block value's entries start (1, or after its locator).
local function firstEntry(v)
  return #v % 2 == 1 and LOCATOR_LEN + 1 or 1
end

-- The head's key of a located value (or of a locator): its first 8 bytes.
local function locatorHead(loc)
  return string.sub(loc, 1, 8)
end

-- A locator's chain position (bytes 9 to 11).
local function positionOf(loc)
  local a, b, c = string.byte(loc, 9, 11)
  return (a * 256 + b) * 256 + c
end

-- The locator of the block at chain position p under the head whose key is head.
local function locator(head, p)
  return head .. string.char((p - p % 65536) / 65536, (p - p % 256) / 256 % 256, p % 256)
end

-- The holder slot of the entry whose two bytes are b1, b2.
local function entrySlot(b1, b2)
  return b1 * 16 + (b2 - b2 % 16) / 16
end

-- The tier bits of the entry whose second byte is b2.
local function entryTiers(b2)
  return b2 % 16
end

-- The entry of a slot holding tiers (bits).
local function encodeEntry(slot, tiers)
  return string.char((slot - slot % 16) / 16, (slot % 16) * 16 + tiers)
end
