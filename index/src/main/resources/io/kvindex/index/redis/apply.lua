-- kvindex apply: one chunk of one call of one stream's events, atomically (see RedisPrefixIndex
-- notes). A call of many blocks is applied in chunks, in order. The stream record keeps how far the
-- call in progress got: "<slot>|<watermark>|<seq>:<blocks done>:<digest>[:x]", where blocks done
-- counts the call's events' blocks in order (an AllBlocksCleared one, a stored or removed block one),
-- the digest names the call's events (not how they are cut into chunks), and x says the last token
-- store of the blocks done was dropped and the next chunk goes on with it. A chunk is applied only
-- if it starts where the call with the same sequence and digest stopped, or at block 0 for any
-- other call (other events for the same batch: a new owner's eviction model differs from the
-- former's; applied from their first block, see the notes on idempotence); otherwise nothing
-- changes and the reply says where the next chunk starts. A writer with another chunk size thus
-- goes on from the exact block, and the watermark moves with the last chunk.
-- LIBRARIES: block_value, segment_value, slot_counts, pod_record, stream_record, lib, node
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 free, 6 dead, 7 lease, 8 tmap, 9 counts,
--       10 activity
-- ARGV: 1 stream_field, 2 pod_field, 3 rank (2 bytes), 4 seq, 5 lease ("token:owner"),
--       6 pod_ttl_ms, 7 scope (the model's, 8 bytes), 8 holder_field (the pod's in blocks, its
--       record's copy there), 9 segment_slots (the segment slot limit), 10 epoch (the one the
--       caller knows), 11 from (the chunk's first block in the call, from 0), 12 to (the block
--       after its last), 13 staged (1: the pod record does not list the stream's slot, so lookups
--       do not see its entries until publish.lua or an unstaged apply), 14 first_seq (ARGV[4]
--       unless the call applies consecutive batches first..seq as one, in one chunk),
--       15 call_blocks (the call's blocks), 16 digest (of the call's events, hex), 17.. events
--       (packed, see EventPacker)
-- Replies {status, watermark, stored, removed, dropped, next block}: APPLIED (the call is done),
-- CHUNK (this chunk is done, or was not next: go on with the chunk that starts at the block given),
-- DUPLICATE (the watermark is at or past the first seq: all or some of the batches are applied
-- already), GAP, PARTLY_APPLIED (consecutive batches given as one whose first is part applied:
-- nothing changed; apply them one at a time), FENCED, RESET (the group's epoch is not the caller's:
-- the index was lost, or this is the first write on another node history, see adoptNode).
-- A block's value is its locator when its chain position is known, then its entries (see
-- block_value.lua); a value of odd length is located. A located block's entries are mirrored,
-- without dead slots' entries, into its head's field: below position 256 the head is the chain's
-- block at the last multiple of 16 at or before it and the field its segment ('/s'); from 256 on,
-- the block at the last multiple of 256 and the field its span ('/S'), which holds 16 times the
-- blocks in one field. Blocks stored with no locator (an unknown parent, or a position past
-- 2^24 - 1) are counted in the blocks hash's unlocated field. A lookup misses such a block by segments only where its prompt reaches, located,
-- the block the unlocated one was stored under (an anchor): the call that places a block under
-- which unlocated ones hang lists its segment or span field among the unlocated heads, and lookups
-- whose prompt has one of them read block fields (see noteUnlocated below). A sparse cache group's
-- blocks (sliding window, chunked local, Mamba; event 'A') are located by the full-attention
-- group's block of the same key instead, so they lie in the same chain positions, their spans are
-- named by the same heads, and below SPAN_FROM their slots are kept in that group's segments (see
-- storeLocatedBy and mergedInto).
-- The counts hash keeps, per holder slot, its entries ("<slot>:blocks") and those holding each
-- tier ("<slot>:gpu" ...): summed over the call and written at its end, so they change exactly
-- when entries do (a chunk not next, a duplicate or a store of what the slot holds changes none).
-- The activity hash keeps each stream's last applied chunk ('a' + stream field -> ms) and last
-- purge ('p' + stream field -> "<ms>|<slot retired>"); the counts hash also counts the segments
-- that overflowed ("overflowed-segments").
local FIRST_EVENT = 17
local SEGMENT, SPAN = '/s', '/S'
local SEGMENT_BLOCKS, SPAN_FROM, SPAN_BLOCKS, MAX_POSITION = 16, 256, 256, 16777215
-- A span's value may grow to this many bytes per slot of the segment limit (16 kB at 256): one
-- chain's 256 blocks take about 2.9 kB.
local SPAN_BYTES_PER_SLOT = 64
local UNLOCATED = 'kvindex/unlocated'
local UNLOCATED_PARENTS, UNLOCATED_HEADS = 'kvindex/unlocated-parents', 'kvindex/unlocated-heads'
-- The most parents and heads listed; past them the heads say ALL_HEADS (every lookup of the group
-- reads block fields) until no unlocated block is left.
local MAX_UNLOCATED_PARENTS, MAX_UNLOCATED_HEADS, ALL_HEADS = 128, 16, '*'
local byte, sub, char, concat, find = string.byte, string.sub, string.char, table.concat, string.find

if adoptNode(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], holderPrefixOf(ARGV[8], ARGV[2])) then
  return {'RESET', -1, 0, 0, 0, 0}
end
if not holdsLease(KEYS[7], ARGV[5]) then return {'FENCED', -1, 0, 0, 0, 0} end
if not sameEpoch(KEYS[1], ARGV[10]) then return {'RESET', -1, 0, 0, 0, 0} end

local slot, wm, wmText, partSeq, partDone, partDigest, partTail =
  parseStream(redis.call('HGET', KEYS[2], ARGV[1]))
local seq, firstSeq = tonumber(ARGV[4]), tonumber(ARGV[14])
if wm then
  if firstSeq <= wm then return {'DUPLICATE', wm, 0, 0, 0, 0} end
  if firstSeq > wm + 1 then return {'GAP', wm, 0, 0, 0, 0} end
end
-- Batches given as one starting with one part applied: the part done is not a prefix of this call
-- that the record could name, so they go one at a time (applying the part again is not always
-- idempotent: a token store whose parent a later removal of the part unmapped would be dropped).
if firstSeq < seq and partSeq == firstSeq then return {'PARTLY_APPLIED', wm or -1, 0, 0, 0, 0} end
local from, to, total, digest = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[15]), ARGV[16]
local resumes = partSeq == seq and partDigest == digest
local done = resumes and partDone or 0
partTail = resumes and partTail
if from ~= done then return {'CHUNK', wm or -1, 0, 0, 0, done} end

-- Check capacity before the first write: a script that fails half-way keeps its writes.
local needed, has = 0, slot ~= 0
for i = FIRST_EVENT, #ARGV do
  local kind = string.sub(ARGV[i], 1, 1)
  if kind == 'C' then
    has = false
  elseif (kind == 'S' or kind == 'A' or kind == 'M' or kind == 'T') and not has then
    needed = needed + 1
    has = true
  end
end
if needed > 0 then
  local nextSlot = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
  if needed > redis.call('LLEN', KEYS[5]) + MAX_SLOT - nextSlot then
    return redis.error_reply('KVINDEX_SLOTS_FULL all ' .. MAX_SLOT ..
      ' holder slots of this index group are taken or await garbage collection;' ..
      ' run collectGarbage or configure more index groups')
  end
end

local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
local stored, removed, dropped = 0, 0, 0
local retired

local function retire()
  retired = slot
  if slot ~= 0 then
    redis.call('HSET', KEYS[6], slot, pass)
    slot = 0
  end
  redis.call('UNLINK', KEYS[8])
end

local function ensureSlot()
  if slot == 0 then
    local s = redis.call('LPOP', KEYS[5])
    if s then slot = tonumber(s) else slot = redis.call('HINCRBY', KEYS[1], 'next', 1) end
  end
end

-- slot -> {entries, gpu, cpu, storage, other}: what this call changed.
local held = {}

local function tally(tier, entries, tiers)
  if entries == 0 and tiers == 0 then return end
  local c = held[slot]
  if not c then
    c = noCounts()
    held[slot] = c
  end
  c[1] = c[1] + entries
  c[COUNT_INDEX[tier]] = c[COUNT_INDEX[tier]] + tiers
end

-- The slot's entry as block_value.lua's entryAt finds it; computed again only when the call's slot
-- changes.
local idSlot, idHiChar, idLo
local function slotId()
  if idSlot ~= slot then
    idSlot = slot
    idHiChar, idLo = entryId(slot)
  end
  return idHiChar, idLo
end

-- Returns the new value ('' when no entry is left) or nil when unchanged, and whether this
-- holder still has an entry.
local function clearTier(v, tier)
  if not v or slot == 0 then return nil, false end
  local hiChar, lo = slotId()
  return withoutTier(v, hiChar, lo, tier)
end

-- Segment changes, applied once at the end: segment field -> {slot id (offset 1, key 8), value}*.
local segments, segmentOrder = {}, {}
local unlocated = 0

-- Unlocated blocks and the heads that lead to them. Each unlocated block was stored under a parent
-- (a block's parent is fixed by its hash) that was then absent or unlocated itself; lookups by
-- segments miss it only once that parent is located. So the group keeps the parents under which
-- unlocated blocks were stored (UNLOCATED_PARENTS: 18-byte block fields; the first block of each
-- unlocated store's parent, the rest of a store following its first), and when a call places one
-- of them, or places an unlocated block and stops before the block after it, it lists the placed
-- block's segment or span field (the prompt's field there) in UNLOCATED_HEADS. Both are dropped
-- with the last unlocated block. Lookups read the heads with every segment read.
local parentsText, parentsSet, parentsAdded = nil, nil, {}
local anchorFields, anchorsAll = {}, false

local function unlocatedParents()
  if not parentsSet then
    parentsText = redis.call('HGET', KEYS[4], UNLOCATED_PARENTS) or ''
    parentsSet = {}
    for at = 1, #parentsText - 17, 18 do parentsSet[sub(parentsText, at, at + 17)] = true end
  end
  return parentsSet
end

local function noteParent(field)
  local set = unlocatedParents()
  if not set[field] then
    set[field] = true
    parentsAdded[#parentsAdded + 1] = field
  end
end

local function noteAnchor(prefix, head, p)
  anchorFields[#anchorFields + 1] = prefix .. head .. (p < SPAN_FROM and SEGMENT or SPAN)
end

-- Writes what the call learned: the unlocated count, and the parents and heads while any is left.
local function noteUnlocated()
  local left
  if unlocated ~= 0 then left = redis.call('HINCRBY', KEYS[4], UNLOCATED, unlocated) end
  if left and left <= 0 then
    redis.call('HDEL', KEYS[4], UNLOCATED_PARENTS, UNLOCATED_HEADS)
    return
  end
  if #parentsAdded > 0 then
    if #parentsText / 18 + #parentsAdded > MAX_UNLOCATED_PARENTS then
      anchorsAll = true
    else
      redis.call('HSET', KEYS[4], UNLOCATED_PARENTS, parentsText .. concat(parentsAdded))
    end
  end
  if #anchorFields == 0 and not anchorsAll then return end
  local heads = redis.call('HGET', KEYS[4], UNLOCATED_HEADS) or ''
  if heads == ALL_HEADS then return end
  local listed, added = {}, {}
  for at = 1, #heads - 19, 20 do listed[sub(heads, at, at + 19)] = true end
  for _, field in ipairs(anchorFields) do
    if not listed[field] then
      listed[field] = true
      added[#added + 1] = field
    end
  end
  if anchorsAll or #heads / 20 + #added > MAX_UNLOCATED_HEADS then
    redis.call('HSET', KEYS[4], UNLOCATED_HEADS, ALL_HEADS)
  elseif #added > 0 then
    redis.call('HSET', KEYS[4], UNLOCATED_HEADS, heads .. concat(added))
  end
end

-- A sparse cache group (sliding window, chunked local, Mamba) located by its anchor (the model's
-- full-attention group) keeps the slots of its blocks below SPAN_FROM in the anchor's segments
-- rather than its own, so that a hybrid lookup reads the groups' segments in the same fields: a
-- slot of the group whose index is g has the offset 16 (g + 1) + the block's offset from the head,
-- which the anchor's own slots (offsets below 16) never have. The groups kept so are those whose
-- stores come as 'M' (the first sparse group of its spec in the call: the one lookups read; a
-- spec's other groups, such as Gemma's identical sliding-window groups, keep their own), of index
-- 0 to MAX_MERGED_GROUP (their offsets fit a byte); the meta hash records each one's anchor
-- (MERGED .. prefix -> the anchor's prefix) with its first such store, and its later stores and
-- removes follow the record. From SPAN_FROM on, each group keeps its own spans.
local MERGED, MAX_MERGED_GROUP = 'merged:', 14
local merged = {}

-- The prefix of the group whose segments keep this group's slots (false: its own).
local function mergedInto(prefix)
  local into = merged[prefix]
  if into == nil then
    into = redis.call('HGET', KEYS[1], MERGED .. prefix) or false
    merged[prefix] = into
  end
  return into
end

-- The group's index (a prefix's last 2 bytes).
local function groupOf(prefix)
  local a, b = byte(prefix, -2, -1)
  return a * 256 + b
end

-- The first offset of a merged group's slots in its anchor's segments.
local function slotBase(prefix)
  return SEGMENT_BLOCKS * (groupOf(prefix) + 1)
end

-- The prefix of the group whose segments keep a sparse group's slots, recorded: its anchor's when
-- its index allows it (else false). A record moves only to a lower anchor: lookups read the
-- model's lowest full-attention group, and a call that stores a higher one without it (a model
-- with two) must not take the group's slots there.
local function mergeInto(prefix, anchorPrefix)
  if groupOf(prefix) > MAX_MERGED_GROUP then return false end
  local into = mergedInto(prefix)
  if into and groupOf(into) <= groupOf(anchorPrefix) then return into end
  redis.call('HSET', KEYS[1], MERGED .. prefix, anchorPrefix)
  merged[prefix] = anchorPrefix
  return anchorPrefix
end

-- The change list of a segment or span field (its head's key and its kind); the last one asked
-- for is kept, since a chain's consecutive blocks mostly share their head.
local lastPrefix, lastHead, lastKind, lastList
local function changesOf(prefix, head, kind)
  if head == lastHead and kind == lastKind and prefix == lastPrefix then return lastList end
  local field = prefix .. head .. kind
  local list = segments[field]
  if not list then
    list = {}
    segments[field] = list
    segmentOrder[#segmentOrder + 1] = field
  end
  lastPrefix, lastHead, lastKind, lastList = prefix, head, kind, list
  return list
end

-- Mirrors a located block's entries into its head's segment or span: the block at chain position p
-- under the head whose key is head. A sparse group kept in its anchor's segments (into, that
-- group's prefix; nil otherwise) is mirrored there below SPAN_FROM, past the anchor's own offsets.
local function mirror(prefix, head, p, key, value, into)
  local list
  if p < SPAN_FROM then
    if into then
      list, p = changesOf(into, head, SEGMENT), slotBase(prefix) + p % SEGMENT_BLOCKS
    else
      list, p = changesOf(prefix, head, SEGMENT), p % SEGMENT_BLOCKS
    end
  else
    list, p = changesOf(prefix, head, SPAN), p % SPAN_BLOCKS
  end
  local n = #list
  list[n + 1] = slotIdOf(p, key)
  list[n + 2] = value
end

-- Stores consecutive blocks of one chain. parent: the chain's block before keys[1] ('' for a chain
-- that starts at block 0, nil when unknown). A block's locator is its stored one, else follows from
-- the block before it (whose head and position are carried along, not parsed again).
local function storeChain(prefix, keys, tier, parent)
  local n = #keys
  local hiChar, lo = slotId()
  local fields = {}
  for k = 1, n do fields[k] = prefix .. keys[k] end
  local vals = hmget(KEYS[4], fields)
  -- the block before: its head's key and its chain position (-1: before block 0; nil: unknown)
  local prevHead, prevPos
  if parent == '' then
    prevPos = -1
  elseif parent then
    local pv = redis.call('HGET', KEYS[4], prefix .. parent)
    if pv and isLocated(pv) then prevHead, prevPos = locatorHead(pv), positionOf(pv) end
  end
  local out, seen, entries, tiers = {}, {}, 0, 0
  -- An unlocated block this call placed, whose own next block may still be unlocated: it becomes
  -- an anchor unless the call places the next one too.
  local runEnd
  for k = 1, n do
    local key = keys[k]
    -- A key repeated in one call (never in a real chain) is stored once.
    local again = seen[key]
    local old = vals[k]
    local head, p, located
    if again ~= nil then
      if again then head, p = locatorHead(again), positionOf(again) end
    elseif old and isLocated(old) then
      head, p, located = locatorHead(old), positionOf(old), true
    elseif prevPos and prevPos < MAX_POSITION then
      p = prevPos + 1
      if p % (p < SPAN_FROM and SEGMENT_BLOCKS or SPAN_BLOCKS) == 0 then
        head = key
      else
        head = prevHead
      end
    end
    if again == nil and runEnd and not (p and not located and old) then
      noteAnchor(prefix, runEnd[1], runEnd[2])
    end
    if again == nil then runEnd = nil end
    if again == nil and not p and prevPos and not old then
      anchorsAll = true -- past the last position kept: the block before is an anchor no list names
    end
    prevHead, prevPos = head, p
    if again == nil then
      local nv, added = withTier(old, hiChar, lo, tier)
      if nv then
        tiers = tiers + 1
        if added then entries = entries + 1 end
      end
      local loc
      if p and not located then
        loc = locator(head, p)
        nv = loc .. (nv or old)
        if old then
          unlocated = unlocated - 1
          runEnd = {head, p}
        end
        if unlocatedParents()[fields[k]] then noteAnchor(prefix, head, p) end
      elseif not p and not old then
        unlocated = unlocated + 1
        if k == 1 then
          if parent and parent ~= '' then noteParent(prefix .. parent) else anchorsAll = true end
        end
      end
      seen[key] = p and (loc or sub(old, 1, LOCATOR_LEN)) or false
      if nv then
        out[#out + 1] = fields[k]
        out[#out + 1] = nv
        if p then mirror(prefix, head, p, key, sub(nv, LOCATOR_LEN + 1)) end
      end
    end
  end
  if runEnd then noteAnchor(prefix, runEnd[1], runEnd[2]) end
  hset(KEYS[4], out)
  tally(tier, entries, tiers)
end

-- Stores blocks of a sparse cache group (sliding window, chunked local, Mamba: the blocks it keeps
-- are scattered, and their parents mostly blocks it never kept), each located by the anchor group's
-- (full attention's) field of the same key: every group of a model publishes the same key for the
-- same token boundary, so the block takes that block's locator, a position in the full-attention
-- chain, and its entries are mirrored into the anchor's segment (mergedInto) or its own group's
-- span of that chain's head. Lookups read a sparse group by the same heads as the full-attention
-- one. A block whose anchor is not located yet (not held, or itself unlocated) is counted as
-- unlocated and the anchor's field noted as a parent, so that the call that places it lists its
-- head (anchorPrefix nil: the model's full-attention group is not known yet, and every lookup of
-- the group reads block fields until the block goes).
local function storeLocatedBy(prefix, anchorPrefix, keys, tier, firstOfSpec)
  local n = #keys
  local hiChar, lo = slotId()
  local fields, anchorFields = {}, {}
  for k = 1, n do
    fields[k] = prefix .. keys[k]
    if anchorPrefix then anchorFields[k] = anchorPrefix .. keys[k] end
  end
  local vals = hmget(KEYS[4], fields)
  local anchors = hmget(KEYS[4], anchorFields)
  -- A store without an anchor may still find its blocks located (by an earlier store): they go
  -- where the record says, as its removes do.
  local into = (firstOfSpec and anchorPrefix and mergeInto(prefix, anchorPrefix))
    or mergedInto(prefix)
  local out, seen, entries, tiers = {}, {}, 0, 0
  for k = 1, n do
    local key = keys[k]
    if not seen[key] then
      seen[key] = true
      local old, a = vals[k], anchors[k]
      local located = old and isLocated(old)
      local loc
      if located then
        loc = sub(old, 1, LOCATOR_LEN)
      elseif a and isLocated(a) then
        loc = sub(a, 1, LOCATOR_LEN)
      end
      local nv, added = withTier(old, hiChar, lo, tier)
      if nv then
        tiers = tiers + 1
        if added then entries = entries + 1 end
      end
      if loc and not located then
        nv = loc .. (nv or old)
        if old then unlocated = unlocated - 1 end
      elseif not loc and not old then
        unlocated = unlocated + 1
        if anchorPrefix then noteParent(anchorFields[k]) else anchorsAll = true end
      end
      if nv then
        out[#out + 1] = fields[k]
        out[#out + 1] = nv
        if loc then
          mirror(prefix, locatorHead(loc), positionOf(loc), key, sub(nv, LOCATOR_LEN + 1), into)
        end
      end
    end
  end
  hset(KEYS[4], out)
  tally(tier, entries, tiers)
end

-- Clears the tier of each block; returns the indexes of blocks this holder no longer has.
local function removeKeys(prefix, keys, tier)
  local n = #keys
  local fields = {}
  for k = 1, n do fields[k] = prefix .. keys[k] end
  local vals = hmget(KEYS[4], fields)
  local gone, out, del, seen, entries, tiers = {}, {}, {}, {}, 0, 0
  for k = 1, n do
    -- A key repeated in one call is cleared once; it is gone if its first occurrence was.
    local gotten = seen[keys[k]]
    if gotten == nil then
      local old = vals[k]
      local nv, still = clearTier(old, tier)
      gotten = not still
      seen[keys[k]] = gotten
      if nv then
        tiers = tiers - 1
        if not still then entries = entries - 1 end
      end
      local located = old and isLocated(old)
      if nv == '' then
        del[#del + 1] = fields[k]
        if not located then unlocated = unlocated - 1 end
      elseif nv then
        out[#out + 1] = fields[k]
        out[#out + 1] = nv
      end
      if nv and located then
        local p = positionOf(old)
        mirror(prefix, locatorHead(old), p, keys[k], sub(nv, LOCATOR_LEN + 1),
          p < SPAN_FROM and mergedInto(prefix) or nil)
      end
    end
    if gotten then gone[#gone + 1] = k end
  end
  hset(KEYS[4], out)
  hdel(KEYS[4], del)
  tally(tier, entries, tiers)
  return gone
end

-- Applies changes ({slot id, entries}*, '' removing a slot) to a segment value; returns the new
-- value and its slot count. A hot segment holds hundreds of slots, so nothing is copied slot by
-- slot: one walk over the slot headers (numbers only) marks where slots start, each change's id
-- is found with a plain find and counts only at a slot's start, and the runs of unchanged slots
-- between changed ones are copied whole. Changed slots stay in place; new ones are appended.
-- A field's changes ({slot id, entries}*, '' removing a slot) as each slot's last entries, without
-- dead slots' (live), and the ids in the order of their first change.
local function latestChanges(list, live)
  local final, order = {}, {}
  for c = 1, #list, 2 do
    local id = list[c]
    if final[id] == nil then order[#order + 1] = id end
    final[id] = live(list[c + 1])
  end
  return final, order
end

local function applyChanges(v, list, live)
  local isStart, count = slotStarts(v)
  local n = #v
  local final, order = latestChanges(list, live)
  for _, id in ipairs(order) do
    if final[id] ~= '' then final[id] = encodeSlot(id, final[id]) end
  end
  local replace, starts, appended = {}, {}, {}
  for _, id in ipairs(order) do
    local at = find(v, id, 1, true)
    while at and not isStart[at] do at = find(v, id, at + 1, true) end
    if at then
      replace[at] = final[id]
      starts[#starts + 1] = at
      if final[id] == '' then count = count - 1 end
    elseif final[id] ~= '' then
      appended[#appended + 1] = final[id]
      count = count + 1
    end
  end
  table.sort(starts)
  local parts, from = {}, 1
  for _, at in ipairs(starts) do
    if at > from then parts[#parts + 1] = sub(v, from, at - 1) end
    if replace[at] ~= '' then parts[#parts + 1] = replace[at] end
    from = slotEnd(v, at)
  end
  if from <= n then parts[#parts + 1] = sub(v, from) end
  for k = 1, #appended do parts[#parts + 1] = appended[k] end
  return concat(parts), count
end

-- Applies changes to a span value. A slot whose entries equal those of the slot before it is
-- written as its header with the length 0xFFFF and no entries (SAME_AS_BEFORE): a span holds up to
-- 256 consecutive blocks of a long chain, which mostly have the same holders, so a long prompt's
-- reply carries each holder set about once per run rather than once per block. As in
-- applyChanges, one walk over the slot headers (numbers only) finds where slots start, and runs of
-- unchanged slots are copied whole; a slot is found by its block key (random bytes, which a plain
-- find skips to quickly), then its offset. Unchanged slots keep the entries they stand for: a
-- SAME_AS_BEFORE slot right after a changed or removed one is written with its entries unless the
-- slot now before it has them. A changed or new slot is SAME_AS_BEFORE when the slot written before
-- it has its entries. When every change is a block the span does not describe yet (a chain
-- growing), the slots are appended without a walk, the first of them with its entries. Returns the
-- new value ('' when no slot is left).
local function applySpanChanges(v, list, live)
  local final, order = latestChanges(list, live)
  local n = #v
  local function repeats(at)
    return slotLength(v, at) == SAME_AS_BEFORE_LEN
  end
  -- The own entries of the slot starting at own ('' for none).
  local function entriesOf(own)
    return own and slotEntries(v, own) or ''
  end
  -- The entries of the slot written last: last, or (when lastOwn is not nil) those of the slot of
  -- v that lastOwn starts.
  local parts, last, lastOwn = {}, nil, nil
  local function lastEntries()
    if lastOwn ~= nil then
      last, lastOwn = entriesOf(lastOwn), nil
    end
    return last
  end
  local function write(id, val)
    parts[#parts + 1] = val == lastEntries() and id .. SAME_AS_BEFORE or encodeSlot(id, val)
    last, lastOwn = val, nil
  end
  local offsets, keys = {}, {}
  local new = true
  for k = 1, #order do
    offsets[k], keys[k] = slotIdParts(order[k])
    if new and find(v, keys[k], 2, true) then new = false end
  end
  if new then
    parts[1] = v
    for _, id in ipairs(order) do
      if final[id] ~= '' then write(id, final[id]) end
    end
    return concat(parts)
  end
  -- Slots are found by their keys, then checked to start a slot by a walk over the headers
  -- (numbers only) that goes on from where the last check left it (a call's blocks mostly come in
  -- the span's order, so it walks to its last change, not the whole span) and records only the
  -- slots it was asked about: that they start a slot, and the start of the slot whose own entries
  -- the slot before them stands for (ownerBefore; false for none).
  local walked, owner = 1, false
  local isStart, ownerBefore = {}, {}
  local function isSlot(c)
    if isStart[c] then return true end
    if c < walked then walked, owner = 1, false end
    while walked < c and walked + SEGMENT_SLOT_HEADER - 1 <= n do
      local len = slotLength(v, walked)
      if len == SAME_AS_BEFORE_LEN then
        walked = walked + SEGMENT_SLOT_HEADER
      else
        owner = walked
        walked = walked + SEGMENT_SLOT_HEADER + len
      end
    end
    if walked == c and c + SEGMENT_SLOT_HEADER - 1 <= n then
      isStart[c], ownerBefore[c] = true, owner
      return true
    end
    return false
  end
  -- A slot's key found at a slot start with its offset; searched from where the last one was, then
  -- from the start.
  local function slotOf(key, offset, from)
    local at = find(v, key, from, true)
    while at do
      if byte(v, at - 1) == offset and isSlot(at - 1) then return at - 1 end
      at = find(v, key, at + 1, true)
    end
  end
  local replace, starts, appended = {}, {}, {}
  local hint = 2
  for k, id in ipairs(order) do
    local offset, key = offsets[k], keys[k]
    local at = slotOf(key, offset, hint) or (hint > 2 and slotOf(key, offset, 2))
    if at then
      hint = at + 1
      replace[at] = final[id]
      starts[#starts + 1] = at
    elseif final[id] ~= '' then
      appended[#appended + 1] = id
    end
  end
  table.sort(starts)
  local from = 1
  for _, at in ipairs(starts) do
    if at > from then
      parts[#parts + 1] = sub(v, from, at - 1)
      lastOwn = ownerBefore[at]
    end
    if replace[at] ~= '' then write(slotIdAt(v, at), replace[at]) end
    from = slotEnd(v, at)
    if from <= n and replace[from] == nil and repeats(from) then
      -- It stood for the entries this slot had in v.
      local old = entriesOf(repeats(at) and ownerBefore[at] or at)
      if old ~= lastEntries() then
        write(slotIdAt(v, from), old)
        from = from + SEGMENT_SLOT_HEADER
      end
    end
  end
  if from <= n then
    -- The entries of the span's last slot are not known: the first slot appended carries its own.
    parts[#parts + 1] = sub(v, from)
    last, lastOwn = nil, nil
  end
  for k = 1, #appended do write(appended[k], final[appended[k]]) end
  return concat(parts)
end

-- A segment or span value (see segment_value.lua) becomes OVERFLOWED once it would hold more than
-- its limit (lookups then read its block fields).
-- The dead slots among those the call's changes name: the whole dead hash while it is small, else
-- one HMGET of the slots named, so that a call costs no more while many slots await GC.
local function deadSlots()
  local dead, anyDead = {}, false
  local count = redis.call('HLEN', KEYS[6])
  if count == 0 then return dead, false end
  if count <= 128 then
    local deadList = redis.call('HKEYS', KEYS[6])
    for k = 1, #deadList do dead[tonumber(deadList[k])] = true end
    return dead, true
  end
  local named, ids = {}, {}
  for _, field in ipairs(segmentOrder) do
    local list = segments[field]
    for c = 2, #list, 2 do
      local v = list[c]
      nameSlots(v, 1, #v + 1, named, ids)
    end
  end
  local died = hmget(KEYS[6], ids)
  for k = 1, #ids do
    if died[k] then
      dead[ids[k]] = true
      anyDead = true
    end
  end
  return dead, anyDead
end

local function flushSegments()
  if #segmentOrder == 0 then return end
  local dead, anyDead = deadSlots()
  local function live(v)
    if not anyDead or v == '' then return v end
    return entriesWithout(v, 1, #v + 1, dead) or v
  end
  local limit = tonumber(ARGV[9])
  local spanBytes = limit * SPAN_BYTES_PER_SLOT
  local current = hmget(KEYS[4], segmentOrder)
  local out, del, overflowed = {}, {}, 0
  for s = 1, #segmentOrder do
    local v = current[s]
    if v ~= OVERFLOWED then
      local field = segmentOrder[s]
      local nv, over
      if sub(field, -2) == SPAN then
        nv = applySpanChanges(v or '', segments[field], live)
        over = #nv > spanBytes
      else
        local count
        nv, count = applyChanges(v or '', segments[field], live)
        -- The limit counts each group's slots apart (a full-attention segment keeps a sparse
        -- group's too): walked again only past the limit in all.
        over = count > limit and mostSlotsOfOneGroup(nv) > limit
      end
      if over then
        out[#out + 1] = field
        out[#out + 1] = OVERFLOWED
        overflowed = overflowed + 1
      elseif nv ~= '' then
        out[#out + 1] = field
        out[#out + 1] = nv
      elseif v then
        del[#del + 1] = field
      end
    end
  end
  hset(KEYS[4], out)
  hdel(KEYS[4], del)
  if overflowed > 0 then redis.call('HINCRBY', KEYS[9], OVERFLOWED_SEGMENTS, overflowed) end
end

local function tokenKey(prev, tokens)
  local h = redis.sha1hex(prev .. tokens)
  return (string.gsub(string.sub(h, 1, 16), '..', function(x)
    return string.char(tonumber(x, 16))
  end))
end

local function u32(s, at)
  local a, b, c, d = string.byte(s, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- The events, one function per packed kind (see EventPacker).
local scope = ARGV[7]

local function prefixOf(ev)
  return scope .. sub(ev, 3, 4)
end

local function hashesOf(ev, from)
  local hashes = {}
  for k = 1, (#ev - from + 1) / 8 do hashes[k] = sub(ev, from + (k - 1) * 8, from - 1 + k * 8) end
  return hashes
end

-- 'S' tier(1) cg(2) hasParent(1) parent(8) hashes(8n): an engine-key store.
local function storeEngine(ev)
  local keys = hashesOf(ev, 14)
  ensureSlot()
  storeChain(prefixOf(ev), keys, byte(ev, 2), byte(ev, 5) == 1 and sub(ev, 6, 13) or '')
  stored = stored + #keys
end

-- 'A' tier(1) cg(2) anchor(2) hashes(8n): an engine-key store of a sparse cache group, located by
-- the anchor group's blocks (65535: the anchor is not known); 'M' the same, of the first sparse
-- group of its spec (kept in the anchor's segments, see mergedInto).
local NO_ANCHOR = char(255, 255)
local function storeAnchored(ev)
  local keys = hashesOf(ev, 7)
  local anchor = sub(ev, 5, 6)
  ensureSlot()
  storeLocatedBy(prefixOf(ev), anchor ~= NO_ANCHOR and scope .. anchor or nil, keys, byte(ev, 2),
    sub(ev, 1, 1) == 'M')
  stored = stored + #keys
end

-- 'R' tier(1) cg(2) hashes(8n): an engine-key remove.
local function removeEngine(ev)
  local hashes = hashesOf(ev, 5)
  removeKeys(prefixOf(ev), hashes, byte(ev, 2))
  removed = removed + #hashes
end

-- 'Q' tier(1) cg(2) hashes(8n): a token-key remove; engine hashes resolve through the stream's map.
local function removeToken(ev)
  local cg = sub(ev, 3, 4)
  local mapped = {}
  for k, h in ipairs(hashesOf(ev, 5)) do mapped[k] = cg .. h end
  local tks = hmget(KEYS[8], mapped)
  local keys, known = {}, {}
  for k = 1, #mapped do
    if tks[k] then
      keys[#keys + 1] = tks[k]
      known[#known + 1] = mapped[k]
    else
      dropped = dropped + 1
    end
  end
  if #keys > 0 then
    local gone = removeKeys(prefixOf(ev), keys, byte(ev, 2))
    local unmap = {}
    for _, g in ipairs(gone) do unmap[#unmap + 1] = known[g] end
    hdel(KEYS[8], unmap)
  end
  removed = removed + #keys
end

-- 'T' tier(1) cg(2) hasParent(1) parent(8) root(8) blockSize(4) n(4) hashes(8n) tokens(4*bs*n):
-- a token-key store; the chain continues from the parent's token key (or the root). hasParent 2:
-- the rest of a store the previous chunk began, dropped too if that chunk dropped its beginning
-- (as the whole store would have been).
local tailDropped = partTail
local function storeToken(ev)
  local cg = sub(ev, 3, 4)
  local bs, n = u32(ev, 22), u32(ev, 26)
  local prev, parent
  local hasParent = byte(ev, 5)
  if hasParent == 2 and tailDropped then
    prev = nil
  elseif hasParent >= 1 then
    prev = redis.call('HGET', KEYS[8], cg .. sub(ev, 6, 13))
    parent = prev
  else
    prev = sub(ev, 14, 21)
    parent = ''
  end
  if not prev then
    dropped = dropped + n
    tailDropped = true
    return
  end
  tailDropped = false
  ensureSlot()
  local keys, maps = {}, {}
  local tokAt = 30 + 8 * n
  for k = 1, n do
    prev = tokenKey(prev, sub(ev, tokAt + (k - 1) * 4 * bs, tokAt + k * 4 * bs - 1))
    keys[k] = prev
    maps[#maps + 1] = cg .. sub(ev, 30 + (k - 1) * 8, 29 + k * 8)
    maps[#maps + 1] = prev
  end
  storeChain(prefixOf(ev), keys, byte(ev, 2), parent)
  hset(KEYS[8], maps)
  stored = stored + n
end

local apply = {
  C = retire, S = storeEngine, A = storeAnchored, M = storeAnchored, R = removeEngine,
  Q = removeToken, T = storeToken
}
for i = FIRST_EVENT, #ARGV do
  local ev = ARGV[i]
  local kind = sub(ev, 1, 1)
  local f = apply[kind]
  if not f then return redis.error_reply('KVINDEX_BAD_EVENT unknown event kind ' .. kind) end
  if kind ~= 'T' then tailDropped = false end
  f(ev)
end

noteUnlocated()
writeCountChanges(KEYS[9], held)
flushSegments()

local now = nowMs()
redis.call('HSET', KEYS[10], 'a' .. ARGV[1], now)
if retired then redis.call('HSET', KEYS[10], 'p' .. ARGV[1], now .. '|' .. retired) end

-- The pod record: a new deadline, this rank's pair replaced by its current slot (if any).
local old = redis.call('HGET', KEYS[3], ARGV[2])
local rec = encodeDeadline(now + tonumber(ARGV[6])) .. pairsWithout(old, ARGV[3])
if slot ~= 0 and ARGV[13] ~= '1' then rec = rec .. podPair(slot, ARGV[3]) end
writePodRecord(KEYS[3], KEYS[4], ARGV[2], ARGV[8], old, rec)
if to < total then
  redis.call('HSET', KEYS[2], ARGV[1], encodeStream(slot, wmText, seq, to, digest, tailDropped))
  return {'CHUNK', wm or -1, stored, removed, dropped, to}
end
-- A staged rebuild that holds no slot is marked as such: a new owner must go on staged.
redis.call('HSET', KEYS[2], ARGV[1],
  encodeStream(slot, string.format('%d', seq), nil, nil, nil, nil, slot == 0 and ARGV[13] == '1'))
return {'APPLIED', seq, stored, removed, dropped, total}
