-- kvindex inferred evictions, the writes: the mark that a pod's evictions are inferred (its
-- streams' owners set it), the pod's touches, the blocks of observed requests (routers add them),
-- and their reads (the owners read them in order, and drop what every reader has read), and what
-- a stream's owner leaves for the stream's next owner (its model's size and the removals it decided
-- and the index has not applied).
-- A touch's entry id is '<offset>-<size>': the bytes of touches the pod had before it, then its own
-- (its block keys plus a fixed overhead), counted in the touch state's 'o' ('l' is the latest
-- id). So the stream's bytes are known without reading it, and trimming by bytes or by a cursor is
-- one XTRIM MINID. The state also holds each reader's cursor, 'c<rank>' -> '<cursor>|<ms of the
-- read>', and 'i', the ids of the latest touches (8 bytes each, newest first), so that a touch
-- retried after a lost reply is added once. A touch records when it was made ('t', Redis's clock
-- in ms) and the blocks the engine reported cached ('c'). inferred.lua reads the mark and the
-- handover.
-- KEYS (mark): 1 infer (the pod's infer key)
-- ARGV (mark): 1 op, 2 capacity, 3 ttl_ms
-- KEYS (handover): 1 handover (the stream's handover key)
-- ARGV (handover): 1 op, 2 value ("<size>|" then the removals, 8 bytes each), 3 ttl_ms
-- LIBRARIES: lib
-- KEYS: 1 touches (the pod's touch stream), 2 touch_state (its touch state)
-- ARGV (touch): 1 op, 2 rank, 3 block_keys, 4 error_blocks (the prediction's error in blocks),
--       5 max_entries, 6 ttl_ms, 7 max_bytes, 8 overhead_bytes (counted per touch), 9 id (the
--       touch's, 8 bytes, the same in its retries: a retry after a lost reply adds nothing, 0),
--       10 cached_blocks (the blocks the engine reported cached)
-- ARGV (read): 1 op, 2 rank (the reader's), 3 cursor (an entry id), 4 max_entries, 5 max_bytes,
--       6 reader_ttl_ms (how long a reader's cursor counts)
-- ARGV (last): 1 op, 2 rank (the reader's), 3 reader_ttl_ms (how long a reader's cursor counts)
local RECENT_IDS = 16
local op = ARGV[1]
if op == 'mark' or op == 'handover' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end

-- The offset after the touch an entry id names ('<offset>-<size>').
local function entryEnd(id)
  local at, size = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(at) + tonumber(size)
end

-- Notes the reader's cursor, then drops every touch all current readers have read.
local function noteCursor(rank, cursor, now, readerTtl)
  redis.call('HSET', KEYS[2], 'c' .. rank, cursor .. '|' .. now)
  local state = redis.call('HGETALL', KEYS[2])
  local upTo, stale = nil, {}
  for i = 1, #state, 2 do
    local name, value = state[i], state[i + 1]
    if string.sub(name, 1, 1) == 'c' then
      local id, at = string.match(value, '^([%d-]+)|(%d+)$')
      if not id or tonumber(at) < now - readerTtl then
        stale[#stale + 1] = name
      else
        local e = entryEnd(id)
        if not upTo or e < upTo then upTo = e end
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', KEYS[2], unpack(stale)) end
  if redis.call('PTTL', KEYS[2]) < readerTtl then
    redis.call('PEXPIRE', KEYS[2], readerTtl) -- a state no touch came to yet has no expiry
  end
  if upTo and upTo > 0 then
    redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d', upTo))
  end
end

if op == 'touch' then
  local recent = redis.call('HGET', KEYS[2], 'i') or ''
  for at = 1, #recent - 7, 8 do
    if string.sub(recent, at, at + 7) == ARGV[9] then
      return 0
    end
  end
  local size = #ARGV[3] + tonumber(ARGV[8])
  local from = tonumber(redis.call('HGET', KEYS[2], 'o') or '0')
  if from == 0 then
    redis.call('DEL', KEYS[1]) -- a stream whose state is gone: its ids would not follow
  end
  local to = from + size
  local id = string.format('%d-%d', from, size)
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], id, 'r', ARGV[2], 'k', ARGV[3], 'e', ARGV[4],
    'c', ARGV[10], 't', string.format('%d', nowMs()))
  redis.call('HSET', KEYS[2], 'o', string.format('%d', to), 'l', id,
    'i', string.sub(ARGV[9] .. recent, 1, 8 * RECENT_IDS))
  local most = tonumber(ARGV[7])
  if to > most then
    -- Keeps the touches that start at most `most` bytes before the end: at most `most` bytes.
    redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d', to - most))
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
  return 1
elseif op == 'read' then
  -- {more (1 when touches were left for the next read), then id, rank, keys, error, cached
  -- blocks and time of each entry after the cursor, flat, oldest first (an entry without 'c', from
  -- a router that did not send it, restores nothing)}
  local now = nowMs()
  local cursor = ARGV[3]
  local after = entryEnd(cursor)
  local total = tonumber(redis.call('HGET', KEYS[2], 'o') or '0')
  if after > total then
    cursor, after = '0-0', 0 -- the touches started afresh (their state expired): read them all
  end
  -- Entries that start within the byte budget: the reply holds at most that plus one touch.
  local entries = redis.call('XRANGE', KEYS[1], '(' .. cursor,
    string.format('%d', after + tonumber(ARGV[5])), 'COUNT', ARGV[4])
  if #entries == 0 and total > after then
    -- The next unread touch starts past the budget (what came before it was dropped unread).
    entries = redis.call('XRANGE', KEYS[1], '(' .. cursor, '+', 'COUNT', 1)
    if #entries == 0 then
      cursor = redis.call('HGET', KEYS[2], 'l') or cursor -- none is left: go on after the latest
    end
  end
  local out = {0}
  for _, entry in ipairs(entries) do
    local fields = {}
    for i = 1, #entry[2], 2 do
      fields[entry[2][i]] = entry[2][i + 1]
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = fields['r'] or '0'
    out[#out + 1] = fields['k'] or ''
    out[#out + 1] = fields['e'] or '0'
    out[#out + 1] = fields['c'] or '0'
    out[#out + 1] = fields['t'] or '0'
    cursor = entry[1]
  end
  if entryEnd(cursor) < total then out[1] = 1 end
  noteCursor(ARGV[2], cursor, now, tonumber(ARGV[6]))
  return out
elseif op == 'last' then
  -- The cursor of a reader that starts now: the latest touch's id.
  local cursor = redis.call('HGET', KEYS[2], 'l') or '0-0'
  noteCursor(ARGV[2], cursor, nowMs(), tonumber(ARGV[3]))
  return cursor
end
return redis.error_reply('kvindex infer.lua: unknown operation ' .. tostring(op))
