-- kvindex sweep: forget pods that have left. A pass HSCANs the stream records, then the pod
-- records (cursor and phase in meta), and removes those of pods whose liveness deadline passed
-- more than the retention ago (a stream whose pod record is gone counts too). A forgotten
-- stream's holder slot is retired as a purge would, so GC strips its entries before reuse.
-- Bounded: one HSCAN of COUNT records per call.
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 dead
-- ARGV: 1 HSCAN count, 2 retention ms, 3 holder-field prefix
-- Returns {done (0|1), records scanned, pods forgotten, forgotten stream fields...}
local t = redis.call('TIME')
local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[2])
local function departed(rec)
  if not rec then return true end
  local a, b, c, d, e, f, g, h = string.byte(rec, 1, 8)
  if not h then return true end
  return ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h < cutoff
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

-- A pass scans all stream records, then all pod records.
local out = {0, 0, 0}
if (redis.call('HGET', KEYS[1], 'sweep_phase') or 'streams') == 'streams' then
  local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
  local finished, items = scan(KEYS[2])
  for k = 1, #items, 2 do
    local field = items[k]
    if departed(redis.call('HGET', KEYS[3], string.sub(field, 1, #field - 4))) then
      local slot = tonumber(string.match(items[k + 1], '^(%d+)|') or '0')
      if slot ~= 0 then redis.call('HSET', KEYS[5], slot, pass) end
      redis.call('HDEL', KEYS[2], field)
      out[#out + 1] = field
    end
  end
  if finished then redis.call('HSET', KEYS[1], 'sweep_phase', 'pods') end
  out[2] = #items / 2
else
  local finished, items = scan(KEYS[3])
  for k = 1, #items, 2 do
    if departed(items[k + 1]) then
      redis.call('HDEL', KEYS[3], items[k])
      redis.call('HDEL', KEYS[4], ARGV[3] .. items[k])
      out[3] = out[3] + 1
    end
  end
  -- Routers cache pod records and trust them while this counter stands still.
  if out[3] > 0 then redis.call('HINCRBY', KEYS[4], 'kvindex/slots-generation', 1) end
  if finished then
    redis.call('HDEL', KEYS[1], 'sweep_phase')
    out[1] = 1
  end
  out[2] = #items / 2
end
return out
