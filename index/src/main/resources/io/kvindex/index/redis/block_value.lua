-- kvindex library: a block field's value in the blocks hash (its Java type: BlockValue): the
-- block's locator once its chain position is known (LOCATOR_LEN bytes: its head's key (8), then its
-- position in the chain (3, big-endian); so a located value has odd length), then its entries of 2
-- bytes each: holder slot (12 bits) then tiers (4 bits: GPU 1, CPU 2, STORAGE 4, OTHER 8). A
-- segment's or span's slot (segment_value.lua) holds entries of the same shape.
-- A call per entry costs in a hot loop (gc.lua's strip, apply.lua's dead-slot walks, lookup.lua's
-- holder test), so the walks over a whole run of entries are here too (entriesWithout, nameSlots,
-- heldByAny): each takes an entry's slot with entrySlot's arithmetic written out, in this file only.

local LOCATOR_LEN = 11

-- Whether a block value starts with its block's locator (it has odd length).
local function isLocated(v)
  return #v % 2 == 1
end

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

-- A slot's entry as a find looks for it: its first byte (a string, for plain finds) and the high
-- nibble of its second byte.
local function entryId(slot)
  return string.char((slot - slot % 16) / 16), (slot % 16) * 16
end

-- Where the entry of the slot whose entryId is hiChar, lo starts among v's entries from first on,
-- or nil: a plain find of its first byte (in C, where a walk entry by entry in Lua cost about 2 us
-- a block held by dozens of pods), kept only where it starts an entry and the entry's second byte
-- names the slot.
local function entryAt(v, first, hiChar, lo)
  local find, byte = string.find, string.byte
  local at = find(v, hiChar, first, true)
  while at do
    if (at - first) % 2 == 0 then
      local b2 = byte(v, at + 1)
      if b2 and b2 - b2 % 16 == lo then return at end
    end
    at = find(v, hiChar, at + 1, true)
  end
  return nil
end

-- A block value (nil for none) with the slot (entryId's hiChar, lo) holding the tier bit too:
-- nil when it does already; and whether the slot's entry is new.
local function withTier(v, hiChar, lo, tier)
  if not v then return hiChar .. string.char(lo + tier), true end
  local k = entryAt(v, firstEntry(v), hiChar, lo)
  if not k then return v .. hiChar .. string.char(lo + tier), true end
  local b2 = string.byte(v, k + 1)
  local nb2 = bit.bor(b2, tier)
  if nb2 == b2 then return nil end
  return string.sub(v, 1, k) .. string.char(nb2) .. string.sub(v, k + 2), false
end

-- A block value without the tier bit in the slot's entry (entryId's hiChar, lo): nil when
-- unchanged, '' when no entry is left (a locator goes with the last entry); and whether the slot
-- still has an entry.
local function withoutTier(v, hiChar, lo, tier)
  local first = firstEntry(v)
  local k = entryAt(v, first, hiChar, lo)
  if not k then return nil, false end
  local b2 = string.byte(v, k + 1)
  local nb2 = bit.band(b2, bit.bnot(tier))
  if nb2 == b2 then return nil, true end
  if nb2 % 16 == 0 then
    if #v == first + 1 then return '', false end
    return string.sub(v, 1, k - 1) .. string.sub(v, k + 2), false
  end
  return string.sub(v, 1, k) .. string.char(nb2) .. string.sub(v, k + 2), true
end

-- The entries in v[from, to) without those of dead slots (dead[slot] true): nil when none is dead
-- (nothing is copied), else the live ones ('' for none), calling gone(slot, tiers), if given, for
-- each dead one.
local function entriesWithout(v, from, to, dead, gone)
  local byte, sub = string.byte, string.sub
  local keep, nkeep = nil, 0
  for e = from, to - 1, 2 do
    local b1, b2 = byte(v, e, e + 1)
    local s = b1 * 16 + (b2 - b2 % 16) / 16
    if dead[s] then
      if gone then gone(s, b2 % 16) end
      if not keep then
        keep = {}
        if e > from then
          nkeep = 1
          keep[1] = sub(v, from, e - 1)
        end
      end
    elseif keep then
      nkeep = nkeep + 1
      keep[nkeep] = sub(v, e, e + 1)
    end
  end
  return keep and table.concat(keep)
end

-- The slots of the entries in v[from, to) that named does not hold yet: added to it (slot ->
-- true) and to the list ids.
local function nameSlots(v, from, to, named, ids)
  local byte = string.byte
  for e = from, to - 1, 2 do
    local b1, b2 = byte(v, e, e + 1)
    local s = b1 * 16 + (b2 - b2 % 16) / 16
    if not named[s] then
      named[s] = true
      ids[#ids + 1] = s
    end
  end
end

-- Whether an entry of v[from, to) names a slot in want (slot -> true).
local function heldByAny(v, from, to, want)
  local byte = string.byte
  for e = from, to - 1, 2 do
    local b1, b2 = byte(v, e, e + 1)
    if want[b1 * 16 + (b2 - b2 % 16) / 16] then return true end
  end
  return false
end
