#!lua flags=no-writes
-- kvindex staged: whether a stream holds a slot its pod record does not list (its entries were
-- applied staged and not yet published, see apply.lua), or is a staged rebuild that holds no slot
-- yet (its record ends '|s'): 1 or 0.
-- LIBRARIES: pod_record, stream_record
-- KEYS: 1 streams, 2 pods
-- ARGV: 1 stream_field, 2 pod_field, 3 rank (2 bytes)
local slot, _, _, _, _, _, _, stagedEmpty = parseStream(redis.call('HGET', KEYS[1], ARGV[1]))
if slot == 0 then return stagedEmpty and 1 or 0 end
local rec = redis.call('HGET', KEYS[2], ARGV[2]) or ''
return podLists(rec, podPair(slot, ARGV[3])) and 0 or 1
