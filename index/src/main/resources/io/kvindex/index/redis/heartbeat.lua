-- kvindex heartbeat: move a pod's liveness deadline to now + ttl, keeping its holder slots.
-- LIBRARIES: pod_record, lib
-- KEYS: 1 pods, 2 blocks
-- ARGV: 1 pod_field, 2 ttl_ms, 3 holder_field (the pod's in blocks, its record's copy there)
local old = redis.call('HGET', KEYS[1], ARGV[1])
local rec = encodeDeadline(nowMs() + tonumber(ARGV[2])) .. podPairs(old)
writePodRecord(KEYS[1], KEYS[2], ARGV[1], ARGV[3], old, rec)
return 1
