-- kvindex garbage collection step: HSCAN a few block fields, strip entries of dead slots, and
-- free a dead slot once a whole pass that started after its death has completed.
-- LIBRARIES: block_value, segment_value, slot_counts, lib
-- KEYS: 1 meta, 2 blocks, 3 dead, 4 free, 5 counts
-- ARGV: 1 scan_count (HSCAN's COUNT)
-- Returns {done (0|1: no dead slot left), fields scanned, block entries removed, slots freed,
-- slots available (free, or never handed out), dead slots left}
-- Block fields (exactly 18 bytes: scope 8, cache group 2, key 8) hold entries, after an 11-byte
-- locator if the value's length is odd; a block field left with no entry is deleted (and the
-- unlocated count drops if it had no locator; with the last unlocated block go the unlocated
-- parents and heads). Segment and span fields (20 bytes: a head block's field and '/s' or '/S',
-- one format) hold copies of entries: their dead ones are stripped too, so a slot is reused only
-- once no kind names it. A field of any other length (a pod's holder record, the counters) is
-- never parsed and left untouched.
-- Each entry stripped from a block field is counted out of its slot's counts (see apply.lua), and
-- a slot freed takes its counts, all 0 by then, with it.
-- No part of a call grows with the number of dead slots, which is largest exactly when GC must
-- keep up (purges coming faster than passes end): a call asks the dead hash only about the slots its
-- fields name once there are more than DEAD_READ_WHOLE, and a completed pass frees its slots at most
-- FREE_STEP at a time, in this call and the next ones ('free-before' in meta: slots that died
-- before that pass may go; 'free-cursor': how far through the dead hash).
-- The loop is hot (about half of a call's time at 1M fields): it calls the value libraries once per
-- value, whose walks take each entry's slot with plain arithmetic, and a value is copied only when
-- one of its entries is dead.
local BLOCK_FIELD_LEN = 18
local SEGMENT_FIELD_LEN = 20
local DEAD_READ_WHOLE = 128
local FREE_STEP = 128

-- Scan cursors are stored with the process that issued them ("<run id>:<cursor>"): HSCAN's order
-- depends on each process's hash seed, so after a restart from disk, a failover or a slot
-- migration the old cursor means nothing, and a pass continued from it would "complete" without
-- having seen every field and free slots whose entries are still there. On another process the
-- pass starts again from 0, freeing nothing until it completes.
local me
local function runId()
  me = me or processId()
  return me
end
local freed = 0

-- Returns slots that died before the last completed pass to the free list, one HSCAN step of the
-- dead hash; the step that ends the walk ends the freeing.
local function freeStep()
  local before = tonumber(redis.call('HGET', KEYS[1], 'free-before') or '')
  if not before then return end
  local saved = redis.call('HGET', KEYS[1], 'free-cursor')
  local cursor = saved and string.match(saved, '^' .. runId() .. ':(%d+)$') or '0'
  local res = redis.call('HSCAN', KEYS[3], cursor, 'COUNT', FREE_STEP)
  local items = res[2]
  for k = 1, #items, 2 do
    local s = items[k]
    if tonumber(items[k + 1]) < before then
      redis.call('HDEL', KEYS[3], s)
      redis.call('RPUSH', KEYS[4], s)
      redis.call('HDEL', KEYS[5], unpack(countFields(s)))
      freed = freed + 1
    end
  end
  if res[1] == '0' then
    redis.call('HDEL', KEYS[1], 'free-before', 'free-cursor')
  else
    redis.call('HSET', KEYS[1], 'free-cursor', runId() .. ':' .. res[1])
  end
end

local function reply(scanned, removed)
  local left = redis.call('HLEN', KEYS[3])
  return {left == 0 and 1 or 0, scanned, removed, freed, slotsAvailable(KEYS[1], KEYS[4]), left}
end

freeStep()
local deadCount = redis.call('HLEN', KEYS[3])
if deadCount == 0 then return reply(0, 0) end

local pass = tonumber(redis.call('HGET', KEYS[1], 'pass') or '0')
local saved = redis.call('HGET', KEYS[1], 'cursor')
local cursor = saved and string.match(saved, '^' .. runId() .. ':(%d+)$')
if not cursor then
  pass = pass + 1
  cursor = '0'
  redis.call('HSET', KEYS[1], 'pass', pass)
end

local res = redis.call('HSCAN', KEYS[2], cursor, 'COUNT', ARGV[1])
local items = res[2]

-- The slots of the values at hand that are dead: all of the dead hash while it is small, else
-- only the slots these values name.
local dead = {}
if deadCount <= DEAD_READ_WHOLE then
  local deadList = redis.call('HKEYS', KEYS[3])
  for k = 1, #deadList do dead[tonumber(deadList[k])] = true end
else
  local named, ids = {}, {}
  for k = 1, #items, 2 do
    local field, v = items[k], items[k + 1]
    if #field == BLOCK_FIELD_LEN then
      nameSlots(v, firstEntry(v), #v + 1, named, ids)
    elseif #field == SEGMENT_FIELD_LEN then
      nameSegmentSlots(v, named, ids)
    end
  end
  local died = hmget(KEYS[3], ids)
  for k = 1, #ids do
    if died[k] then dead[ids[k]] = true end
  end
end
local removed = 0
local out, del, nout, ndel, unlocatedGone = {}, {}, 0, 0, 0

-- The entries stripped from block fields by this call, counted by their bytes (entriesWithout's).
local gone = {}

-- A changed field: deleted when it has no entry left (''), else rewritten.
local function settle(field, v)
  if v == '' then
    ndel = ndel + 1
    del[ndel] = field
  else
    out[nout + 1] = field
    out[nout + 2] = v
    nout = nout + 2
  end
end
for k = 1, #items, 2 do
  local field = items[k]
  if #field == BLOCK_FIELD_LEN then
    -- Its entries, after its locator if it has one (block_value.lua); a located field left with no
    -- entry goes with its locator.
    local v = items[k + 1]
    local first = firstEntry(v)
    local kept = entriesWithout(v, first, #v + 1, dead, gone, 1)
    if kept then
      if #kept < first then
        settle(field, '')
        if first == 1 then unlocatedGone = unlocatedGone + 1 end
      else
        settle(field, kept)
      end
    end
  elseif #field == SEGMENT_FIELD_LEN then
    -- Its slots (segment_value.lua); OVERFLOWED holds none.
    local kept = segmentWithout(items[k + 1], dead)
    if kept then settle(field, kept) end
  end
end
if nout > 0 then hset(KEYS[2], out) end
if ndel > 0 then hdel(KEYS[2], del) end
if unlocatedGone > 0
    and redis.call('HINCRBY', KEYS[2], 'kvindex/unlocated', -unlocatedGone) <= 0 then
  -- The last unlocated block is gone: no head leads to one (see apply.lua).
  redis.call('HDEL', KEYS[2], 'kvindex/unlocated-parents', 'kvindex/unlocated-heads')
end
-- Each entry stripped from a block field is counted out of its slot's counts.
local stripped = {}
for code, n in pairs(gone) do
  local s, tiers = entryOfCode(code)
  local c = stripped[s]
  if not c then
    c = noCounts()
    stripped[s] = c
  end
  countEntry(c, tiers, -n)
  removed = removed + n
end
writeCountChanges(KEYS[5], stripped)

if res[1] == '0' then
  -- The pass is complete: every slot that died before it began is stripped everywhere.
  redis.call('HDEL', KEYS[1], 'cursor', 'free-cursor')
  redis.call('HSET', KEYS[1], 'free-before', pass)
  freeStep()
else
  redis.call('HSET', KEYS[1], 'cursor', runId() .. ':' .. res[1])
end
return reply(#items / 2, removed)
