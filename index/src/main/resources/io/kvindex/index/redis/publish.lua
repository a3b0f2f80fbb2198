-- kvindex publish: shows lookups what a stream's staged batches wrote (see apply.lua, ARGV 13): the
-- pod record lists the stream's slot again, in one call, so the rebuilt state appears whole.
-- LIBRARIES: pod_record, stream_record, lib, node
-- KEYS: 1 meta, 2 streams, 3 pods, 4 blocks, 5 lease, 6 dead
-- ARGV: 1 stream_field, 2 pod_field, 3 rank (2 bytes), 4 lease ("token:owner"), 5 holder_field
--       (the pod's in blocks), 6 epoch (the one the caller knows), 7 pod_ttl_ms
if adoptNode(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], holderPrefixOf(ARGV[5], ARGV[2])) then
  return 'RESET'
end
if not holdsLease(KEYS[5], ARGV[4]) then return 'FENCED' end
if not sameEpoch(KEYS[1], ARGV[6]) then return 'RESET' end
local slot, _, wmText, _, _, _, _, stagedEmpty = parseStream(redis.call('HGET', KEYS[2], ARGV[1]))
if stagedEmpty then redis.call('HSET', KEYS[2], ARGV[1], encodeStream(0, wmText)) end
local old = redis.call('HGET', KEYS[3], ARGV[2])
local rec = encodeDeadline(nowMs() + tonumber(ARGV[7])) .. pairsWithout(old, ARGV[3])
if slot ~= 0 then rec = rec .. podPair(slot, ARGV[3]) end
writePodRecord(KEYS[3], KEYS[4], ARGV[2], ARGV[5], old, rec)
return 'PURGED'
