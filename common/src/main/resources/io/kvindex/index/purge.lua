-- kvindex purge: retire a stream's holder slot in O(1); GC strips its entries later.
-- KEYS: 1 meta, 2 streams, 3 pods, 4 dead, 5 lease, 6 tmap, 7 blocks
-- ARGV: 1 stream field, 2 pod field, 3 rank (2 bytes), 4 fencing token, 5 reset watermark (0|1),
--       6 the pod's holder field in blocks (its record's copy there)
local lease = redis.call('GET', KEYS[5])
if not lease or string.match(lease, '^(%d+):') ~= ARGV[4] then
  return 'FENCED'
end
local rec = redis.call('HGET', KEYS[2], ARGV[1])
local slot, wm = 0, ''
if rec then
  local s, w = string.match(rec, '^(%d+)|(%d*)$')
  slot, wm = tonumber(s), w
end
if slot ~= 0 then
  redis.call('HSET', KEYS[4], slot, redis.call('HGET', KEYS[1], 'pass') or '0')
end
redis.call('UNLINK', KEYS[6])
if ARGV[5] == '1' then wm = '' end
if rec then redis.call('HSET', KEYS[2], ARGV[1], '0|' .. wm) end
local old = redis.call('HGET', KEYS[3], ARGV[2])
if old then
  local parts = {string.sub(old, 1, 8)}
  for k = 9, #old, 4 do
    if string.sub(old, k + 2, k + 3) ~= ARGV[3] then parts[#parts + 1] = string.sub(old, k, k + 3) end
  end
  local rec = table.concat(parts)
  redis.call('HSET', KEYS[3], ARGV[2], rec)
  redis.call('HSET', KEYS[7], ARGV[6], rec)
  -- Routers cache pod records and trust them while this counter stands still.
  if rec ~= old then redis.call('HINCRBY', KEYS[7], 'kvindex/slots-generation', 1) end
end
return 'PURGED'
