-- kvindex incarnation: record a pod's engine incarnation (its process start time) and return the
-- one recorded before, so that a new owner compares with what the last owner saw.
-- KEYS: 1 the pod's incarnation key
-- ARGV: 1 incarnation, 2 ttl ms
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return old
