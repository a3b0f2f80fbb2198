-- kvindex replica registry: an ingester registers itself (expiring), or leaves, and learns how
-- many replicas are alive.
-- KEYS: 1 the registry (sorted set: replica -> expiry ms)
-- ARGV: 1 replica, 2 ttl ms (-1: leave)
local now = nowMs()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[2] == '-1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)
end
return redis.call('ZCARD', KEYS[1])
