-- kvindex library: a block field's value in the blocks hash (its Java type: BlockValue): the
-- block's locator once its chain position is known (LOCATOR_LEN bytes: its head's key (8), then its
-- position in the chain (3, big-endian); so a located value has odd length), then its entries of 2
-- bytes each: holder slot (12 bits) then tiers (4 bits: GPU 1, CPU 2, STORAGE 4, OTHER 8). A
-- segment's or span's slot (segment_value.lua) holds entries of the same shape.
-- A call per entry costs in a hot loop (gc.lua's strip, apply.lua's dead-slot walks, lookup.lua's
-- holder test), so the walks over a whole run of entries are here too (entriesWithout, nameSlots,
-- heldByAny): each takes an entry's slot with entrySlot's arithmetic written out, in this file only.

local LOCATOR_LEN = 11

-- The string functions the value libraries use, as locals: their walks run in hot loops.
local byte, sub, char, find, concat = string.byte, string.sub, string.char, string.find, table.concat

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
  return sub(loc, 1, 8)
end

-- A locator's chain position (bytes 9 to 11).
local function positionOf(loc)
  local a, b, c = byte(loc, 9, 11)
  return (a * 256 + b) * 256 + c
end

-- The locator of the block at chain position p under the head whose key is head.
local function locator(head, p)
  return head .. char((p - p % 65536) / 65536, (p - p % 256) / 256 % 256, p % 256)
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
  return char((slot - slot % 16) / 16, (slot % 16) * 16 + tiers)
end

-- A slot's entry as a find looks for it: its first byte (a string, for plain finds) and the high
-- nibble of its second byte.
local function entryId(slot)
  return char((slot - slot % 16) / 16), (slot % 16) * 16
end

-- Where the entry of the slot whose entryId is hiChar, lo starts among v's entries from first on,
-- or nil: a plain find of its first byte (in C, where a walk entry by entry in Lua cost about 2 us
-- a block held by dozens of pods), kept only where it starts an entry and the entry's second byte
-- names the slot.
local function entryAt(v, first, hiChar, lo)
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
  if not v then return hiChar .. char(lo + tier), true end
  local k = entryAt(v, firstEntry(v), hiChar, lo)
  if not k then return v .. hiChar .. char(lo + tier), true end
  local b2 = byte(v, k + 1)
  local nb2 = bit.bor(b2, tier)
  if nb2 == b2 then return nil end
  return sub(v, 1, k) .. char(nb2) .. sub(v, k + 2), false
end

-- A block value without the tier bit in the slot's entry (entryId's hiChar, lo): nil when
-- unchanged, '' when no entry is left (a locator goes with the last entry); and whether the slot
-- still has an entry.
local function withoutTier(v, hiChar, lo, tier)
  local first = firstEntry(v)
  local k = entryAt(v, first, hiChar, lo)
  if not k then return nil, false end
  local b2 = byte(v, k + 1)
  local nb2 = bit.band(b2, bit.bnot(tier))
  if nb2 == b2 then return nil, true end
  if nb2 % 16 == 0 then
    if #v == first + 1 then return '', false end
    return sub(v, 1, k - 1) .. sub(v, k + 2), false
  end
  return sub(v, 1, k) .. char(nb2) .. sub(v, k + 2), true
end

-- The entries in v[from, to) without those of dead slots (dead[slot] true), after v's bytes from
-- keepFrom (from when not given; a block value's 1 keeps its locator) to from: nil when no entry
-- is dead (nothing is copied), else what is kept ('' for nothing). gone, if given, counts the dead
-- entries by their bytes (entry code -> count; see entryOfCode).
local function entriesWithout(v, from, to, dead, gone, keepFrom)
  -- cut: the first dead entry; keep, once a live entry follows it, what is kept so far. Nothing is
  -- copied or made while no entry is dead, nor while none after the first dead one lives.
  local cut, keep, nkeep = nil, nil, 0
  for e = from, to - 1, 2 do
    local b1, b2 = byte(v, e, e + 1)
    if dead[b1 * 16 + (b2 - b2 % 16) / 16] then
      if gone then
        local code = b1 * 256 + b2
        gone[code] = (gone[code] or 0) + 1
      end
      if not cut then cut = e end
    elseif cut then
      if not keep then
        keep = {}
        local start = keepFrom or from
        if cut > start then
          nkeep = 1
          keep[1] = sub(v, start, cut - 1)
        end
      end
      nkeep = nkeep + 1
      keep[nkeep] = sub(v, e, e + 1)
    end
  end
  if not cut then return nil end
  if keep then return concat(keep) end
  local start = keepFrom or from
  return cut > start and sub(v, start, cut - 1) or ''
end

-- The slot and tier bits of the entry whose two bytes are b1, b2, given as b1 * 256 + b2.
local function entryOfCode(code)
  local b2 = code % 256
  return (code - b2) / 256 * 16 + (b2 - b2 % 16) / 16, b2 % 16
end

-- The slots of the entries in v[from, to) that named does not hold yet: added to it (slot ->
-- true) and to the list ids.
local function nameSlots(v, from, to, named, ids)
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
  for e = from, to - 1, 2 do
    local b1, b2 = byte(v, e, e + 1)
    if want[b1 * 16 + (b2 - b2 % 16) / 16] then return true end
  end
  return false
end
