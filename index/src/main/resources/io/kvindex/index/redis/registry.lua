-- kvindex replica registry: an ingester registers itself (expiring), or leaves, and learns how
-- many replicas are alive. A replica name belongs to the process that registered it while its
-- entry lives: another process under the same name is refused (-1), since leases name their
-- owner and two processes of one name would pass each other's fencing.
-- LIBRARIES: lib
-- KEYS: 1 registry (sorted set: replica -> expiry ms), 2 holders (hash: replica ->
--       '<process>|<expiry ms>')
-- ARGV: 1 replica, 2 ttl_ms (-1: leave), 3 process (the caller, unique to its run)
local now = nowMs()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  local process, expiry = string.match(held, '^(.*)|(%d+)$')
  if process ~= ARGV[3] and tonumber(expiry) > now then
    return -1
  end
end
if ARGV[2] == '-1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  local ttl = tonumber(ARGV[2])
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. '|' .. (now + ttl))
  redis.call('PEXPIRE', KEYS[1], ttl * 10)
  redis.call('PEXPIRE', KEYS[2], ttl * 10)
end
local live = redis.call('ZCARD', KEYS[1])
if redis.call('HLEN', KEYS[2]) > 2 * live + 8 then
  -- names of replicas gone for good (each process has its own by default): forget them
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    local expiry = string.match(all[i + 1], '|(%d+)$')
    if not expiry or tonumber(expiry) <= now then
      redis.call('HDEL', KEYS[2], all[i])
    end
  end
end
return live
