-- kvindex purge: retire a stream's holder slot in O(1); GC strips its entries later.
-- The stream's activity records the purge: 'p' + stream field -> "<ms>|<slot retired>".
-- LIBRARIES: pod_record, stream_record, lib, node
-- KEYS: 1 meta, 2 streams, 3 pods, 4 dead, 5 lease, 6 tmap, 7 blocks, 8 activity
-- ARGV: 1 stream_field, 2 pod_field, 3 rank (2 bytes), 4 lease ("token:owner"), 5 reset_watermark
--       (0|1), 6 holder_field (the pod's in blocks, its record's copy there), 7 epoch (the one the
--       caller knows)
if adoptNode(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7], holderPrefixOf(ARGV[6], ARGV[2])) then
  return 'RESET'
end
if not holdsLease(KEYS[5], ARGV[4]) then return 'FENCED' end
if not sameEpoch(KEYS[1], ARGV[7]) then return 'RESET' end
local rec = redis.call('HGET', KEYS[2], ARGV[1])
local slot, _, wm = parseStream(rec)
if slot ~= 0 then
  redis.call('HSET', KEYS[4], slot, redis.call('HGET', KEYS[1], 'pass') or '0')
end
redis.call('UNLINK', KEYS[6])
if ARGV[5] == '1' then wm = '' end
if rec then
  redis.call('HSET', KEYS[2], ARGV[1], encodeStream(0, wm))
  redis.call('HSET', KEYS[8], 'p' .. ARGV[1], nowMs() .. '|' .. slot)
end
local old = redis.call('HGET', KEYS[3], ARGV[2])
if old then
  writePodRecord(KEYS[3], KEYS[7], ARGV[2], ARGV[6], old,
    podDeadlineBytes(old) .. pairsWithout(old, ARGV[3]))
end
return 'PURGED'
