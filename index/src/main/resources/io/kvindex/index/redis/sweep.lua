-- kvindex sweep: forget pods that have left. A pass HSCANs the stream records, then the pod
-- records (cursor and phase in meta), and removes those of pods whose liveness deadline passed
-- more than the retention ago (a stream whose pod record is gone counts too). A forgotten
-- stream's holder slot is retired as a purge would, in the same call that takes its (slot, rank)
-- pair out of the pod record (both copies, moving the slots generation): a heartbeat or another
-- rank's apply before the pods phase must not revive a record that lists a dead slot, which GC
-- would later free and hand to another pod.
-- Bounded: one HSCAN of COUNT records per call.
-- A forgotten stream's activity (last apply, purge and resync) goes with it.
-- LIBRARIES: pod_record, stream_record, lib, node
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 dead, 6 activity
-- ARGV: 1 scan_count (HSCAN's COUNT), 2 retention_ms, 3 holder_prefix (of the holder fields)
-- Returns {done (0|1), records scanned, pods forgotten, forgotten stream fields...}
adoptNode(KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[4], ARGV[3])
local cutoff = nowMs() - tonumber(ARGV[2])
local function departed(rec)
  local deadline = decodeDeadline(rec)
  return not deadline or deadline < cutoff
end
-- The cursor is kept with the process that issued it, as gc.lua does: on another process the
-- phase scans again from 0.
local me = processId()
local function scan(key)
  local saved = redis.call('HGET', KEYS[1], 'sweep_cursor')
  local cursor = saved and string.match(saved, '^' .. me .. ':(%d+)$') or '0'
  local res = redis.call('HSCAN', key, cursor, 'COUNT', ARGV[1])
  if res[1] == '0' then
    redis.call('HDEL', KEYS[1], 'sweep_cursor')
  else
    redis.call('HSET', KEYS[1], 'sweep_cursor', me .. ':' .. res[1])
  end
  return res[1] == '0', res[2]
end

-- Takes one rank's pair out of a pod record and its copy, if the record still lists it.
local function forgetRank(podField, rank)
  local old = redis.call('HGET', KEYS[3], podField)
  if old then
    local rec = podDeadlineBytes(old) .. pairsWithout(old, rank)
    if rec ~= old then writePodRecord(KEYS[3], KEYS[4], podField, ARGV[3] .. podField, old, rec) end
  end
end

local function sweepStreams(out)
  local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
  local finished, items = scan(KEYS[2])
  for k = 1, #items, 2 do
    local field = items[k]
    local podField = string.sub(field, 1, #field - 4)
    if departed(redis.call('HGET', KEYS[3], podField)) then
      local slot = parseStream(items[k + 1])
      if slot ~= 0 then redis.call('HSET', KEYS[5], slot, pass) end
      forgetRank(podField, string.sub(field, #field - 1))
      redis.call('HDEL', KEYS[2], field)
      redis.call('HDEL', KEYS[6], 'a' .. field, 'p' .. field, 'r' .. field)
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
