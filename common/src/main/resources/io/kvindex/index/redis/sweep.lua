-- kvindex sweep: forget pods that have left. A pass HSCANs the stream records, then the pod
-- records (cursor and phase in meta), and removes those of pods whose liveness deadline passed
-- more than the retention ago (a stream whose pod record is gone counts too). A forgotten
-- stream's holder slot is retired as a purge would, so GC strips its entries before reuse.
-- Bounded: one HSCAN of COUNT records per call.
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 dead
-- ARGV: 1 HSCAN count, 2 retention ms, 3 holder-field prefix
-- Returns {done (0|1), records scanned, pods forgotten, forgotten stream fields...}
local cutoff = nowMs() - tonumber(ARGV[2])
local function departed(rec)
  local deadline = decodeDeadline(rec)
  return not deadline or deadline < cutoff
end
local function scan(key)
  local res = redis.call('HSCAN', key, redis.call('HGET', KEYS[1], 'sweep_cursor') or '0',
    'COUNT', ARGV[1])
  if res[1] == '0' then
    redis.call('HDEL', KEYS[1], 'sweep_cursor')
  else
    redis.call('HSET', KEYS[1], 'sweep_cursor', res[1])
  end
  return res[1] == '0', res[2]
end

local function sweepStreams(out)
  local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
  local finished, items = scan(KEYS[2])
  for k = 1, #items, 2 do
    local field = items[k]
    if departed(redis.call('HGET', KEYS[3], string.sub(field, 1, #field - 4))) then
      local slot = parseStream(items[k + 1])
      if slot ~= 0 then redis.call('HSET', KEYS[5], slot, pass) end
      redis.call('HDEL', KEYS[2], field)
      out[#out + 1] = field
    end
  end
  if finished then redis.call('HSET', KEYS[1], 'sweep_phase', 'pods') end
  out[2] = #items / 2
end

local function sweepPods(out)
  local finished, items = scan(KEYS[3])
  for k = 1, #items, 2 do
    if departed(items[k + 1]) then
      writePodRecord(KEYS[3], KEYS[4], items[k], ARGV[3] .. items[k], items[k + 1], nil)
      out[3] = out[3] + 1
    end
  end
  if finished then
    redis.call('HDEL', KEYS[1], 'sweep_phase')
    out[1] = 1
  end
  out[2] = #items / 2
end

-- A pass scans all stream records, then all pod records.
local out = {0, 0, 0}
if (redis.call('HGET', KEYS[1], 'sweep_phase') or 'streams') == 'streams' then
  sweepStreams(out)
else
  sweepPods(out)
end
return out
