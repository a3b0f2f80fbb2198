-- kvindex heartbeat: move a pod's liveness deadline to now + ttl, keeping its holder slots.
-- KEYS: 1 pods, 2 blocks
-- ARGV: 1 pod field, 2 ttl ms, 3 the pod's holder field in blocks (its record's copy there)
local t = redis.call('TIME')
local d = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
local parts = {}
for k = 8, 1, -1 do parts[k] = d % 256; d = math.floor(d / 256) end
local old = redis.call('HGET', KEYS[1], ARGV[1])
local rest = ''
if old then rest = string.sub(old, 9) end
local rec = string.char(unpack(parts)) .. rest
redis.call('HSET', KEYS[1], ARGV[1], rec)
redis.call('HSET', KEYS[2], ARGV[3], rec)
return 1
