-- kvindex garbage collection step: HSCAN a few block fields, strip entries of dead slots, and
-- free a dead slot once a whole pass that started after its death has completed.
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
-- The loop is hot (about half of a call's time at 1M fields): library functions are locals and
-- the slot is taken with plain arithmetic (no math.floor call), and a value is copied only when
-- one of its entries is dead.
local byte, sub, char, concat = string.byte, string.sub, string.char, table.concat
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
  local function name(v, from, to)
    for e = from, to - 1, 2 do
      local b1, b2 = byte(v, e, e + 1)
      local s = b1 * 16 + (b2 - b2 % 16) / 16
      if not named[s] then
        named[s] = true
        ids[#ids + 1] = s
      end
    end
  end
  for k = 1, #items, 2 do
    local field, v = items[k], items[k + 1]
    local n = #v
    if #field == BLOCK_FIELD_LEN then
      name(v, firstEntry(v), n)
    elseif #field == SEGMENT_FIELD_LEN then
      local i = 1
      while i + SEGMENT_SLOT_HEADER - 1 <= n do
        local len = slotLength(v, i)
        if len == SAME_AS_BEFORE_LEN then len = 0 end
        name(v, i + SEGMENT_SLOT_HEADER, i + SEGMENT_SLOT_HEADER + len)
        i = i + SEGMENT_SLOT_HEADER + len
      end
    end
  end
  local died = hmget(KEYS[3], ids)
  for k = 1, #ids do
    if died[k] then dead[ids[k]] = true end
  end
end
local removed = 0
local out, del, nout, ndel, unlocatedGone = {}, {}, 0, 0, 0

-- slot -> {entries, gpu, cpu, storage, other} stripped from block fields by this call.
local stripped = {}
local function strip(s, t)
  local c = stripped[s]
  if not c then
    c = {0, 0, 0, 0, 0}
    stripped[s] = c
  end
  c[1] = c[1] + 1
  if t % 2 == 1 then c[2] = c[2] + 1 end
  if t % 4 >= 2 then c[3] = c[3] + 1 end
  if t % 8 >= 4 then c[4] = c[4] + 1 end
  if t >= 8 then c[5] = c[5] + 1 end
end

-- A changed field: deleted when it has no entry left (live = 0), else rewritten from its parts.
local function settle(field, parts, live)
  if live == 0 then
    ndel = ndel + 1
    del[ndel] = field
  else
    out[nout + 1] = field
    out[nout + 2] = concat(parts)
    nout = nout + 2
  end
end
for k = 1, #items, 2 do
  local field = items[k]
  if #field == BLOCK_FIELD_LEN then
    local v = items[k + 1]
    local n = #v
    local first = firstEntry(v)
    if n == first + 1 then
      local b1, b2 = byte(v, first, n)
      local s = b1 * 16 + (b2 - b2 % 16) / 16
      if dead[s] then
        ndel = ndel + 1
        del[ndel] = field
        removed = removed + 1
        strip(s, b2 % 16)
        if first == 1 then unlocatedGone = unlocatedGone + 1 end
      end
    else
      -- keep stays nil until the first dead entry; then it collects the locator and live entries.
      local keep, nkeep, live = nil, 0, 0
      for e = first, n - 1, 2 do
        local b1, b2 = byte(v, e, e + 1)
        local s = b1 * 16 + (b2 - b2 % 16) / 16
        if dead[s] then
          removed = removed + 1
          strip(s, b2 % 16)
          if not keep then
            keep = {}
            live = (e - first) / 2
            if e > 1 then
              nkeep = 1
              keep[1] = sub(v, 1, e - 1)
            end
          end
        elseif keep then
          nkeep = nkeep + 1
          keep[nkeep] = sub(v, e, e + 1)
          live = live + 1
        end
      end
      if keep then
        settle(field, keep, live)
        if live == 0 and first == 1 then unlocatedGone = unlocatedGone + 1 end
      end
    end
  elseif #field == SEGMENT_FIELD_LEN then
    -- Its slots (segment_value.lua); OVERFLOWED holds none. As for block fields, nothing is
    -- copied until the first dead entry: parts then collects the rest. A span's slot of length
    -- SAME_AS_BEFORE_LEN has the entries of the slot before it: it stays, as it is, while that
    -- slot keeps an entry, and goes with it.
    local v = items[k + 1]
    local n = #v
    local parts, np, i, beforeKept = nil, 0, 1, true
    while i + SEGMENT_SLOT_HEADER - 1 <= n do
      local from = i + SEGMENT_SLOT_HEADER
      local len = slotLength(v, i)
      if len == SAME_AS_BEFORE_LEN then len = -1 end
      local stop = from + (len < 0 and 0 or len)
      local keep, nkeep = nil, 0
      if len < 0 and not beforeKept then keep = {} end
      for e = from, stop - 1, 2 do
        local b1, b2 = byte(v, e, e + 1)
        if dead[b1 * 16 + (b2 - b2 % 16) / 16] then
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
      beforeKept = not keep or nkeep > 0
      if keep then
        if not parts then
          parts = {}
          if i > 1 then
            np = 1
            parts[1] = sub(v, 1, i - 1)
          end
        end
        if nkeep > 0 then
          local val = concat(keep)
          local len = #val
          np = np + 1
          parts[np] = encodeSlot(sub(v, i, i + 8), val)
        end
      elseif parts then
        np = np + 1
        parts[np] = sub(v, i, stop - 1)
      end
      i = stop
    end
    if parts then settle(field, parts, np) end
  end
end
if nout > 0 then hset(KEYS[2], out) end
if ndel > 0 then hdel(KEYS[2], del) end
if unlocatedGone > 0
    and redis.call('HINCRBY', KEYS[2], 'kvindex/unlocated', -unlocatedGone) <= 0 then
  -- The last unlocated block is gone: no head leads to one (see apply.lua).
  redis.call('HDEL', KEYS[2], 'kvindex/unlocated-parents', 'kvindex/unlocated-heads')
end
for s, c in pairs(stripped) do
  for k = 1, 5 do
    if c[k] > 0 then redis.call('HINCRBY', KEYS[5], countField(s, k), -c[k]) end
  end
end

if res[1] == '0' then
  -- The pass is complete: every slot that died before it began is stripped everywhere.
  redis.call('HDEL', KEYS[1], 'cursor', 'free-cursor')
  redis.call('HSET', KEYS[1], 'free-before', pass)
  freeStep()
else
  redis.call('HSET', KEYS[1], 'cursor', runId() .. ':' .. res[1])
end
return reply(#items / 2, removed)
