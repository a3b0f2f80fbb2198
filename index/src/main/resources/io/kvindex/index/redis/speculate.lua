-- kvindex speculate: a router sent a request to a pod; the prompt's blocks count there (flagged
-- speculative) until the deadline, for every lookup whose prompt shares them. A route is kept
-- under the segment and span fields a lookup of its prompt reads (the blocks hash's field names),
-- in one hash per group, so a lookup reads the routes with one HMGET of its own segment fields,
-- whatever its candidates; each field keeps the latest route of each of its last pods, newest
-- first (route_value.lua). A sorted set orders the fields by their latest deadline:
-- expired fields go as new ones come, and past the group's limit the oldest do, so the group holds
-- a bounded number whatever routers send. Only a pod with a live record gets routes.
-- LIBRARIES: pod_record, route_value, lib
-- KEYS: 1 routes (the group's), 2 order (theirs; both spec: keys, which a router's Redis user may
--       write)
-- ARGV: 1 ttl_ms, 2 pods (the group's pods hash), 3 pod_field, 4 pod_digest (8 bytes),
--       5 max_fields (in the group), 6 max_pods (per field), 7.. routes (pairs: a field, and the
--       route's blocks there, 2 bytes, followed by its keys there)
-- The pods hash is read but not in KEYS: EVALSHA declares its keys written, and a router's user
-- may only read it. It has the group's hash tag, so it is in the same slot as KEYS.
-- A route lasts at most SPEC_TTL_MAX_MS (lookups ignore a deadline further ahead, which this
-- script never writes), and a key expiry further ahead than that is brought back to it.
local ttl = tonumber(ARGV[1])
if not ttl or ttl < 1 or ttl > SPEC_TTL_MAX_MS or ttl ~= math.floor(ttl) then
  return redis.error_reply('KVINDEX_SPEC_TTL a speculative route lasts 1 to ' .. SPEC_TTL_MAX_MS ..
    ' ms, not ' .. tostring(ARGV[1]))
end
local now = nowMs()
if (decodeDeadline(redis.call('HGET', ARGV[2], ARGV[3])) or -1) < now then
  return 0 -- no live record: nothing to route to, and nothing a made-up name can fill
end
local deadlineMs = now + ttl
local digest = ARGV[4]
local perField = tonumber(ARGV[6])
local count = (#ARGV - 6) / 2

-- A few more expired fields go than this call adds, oldest first.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', string.format('(%d', now),
  'LIMIT', 0, 2 * count + 8)
if #expired > 0 then
  redis.call('HDEL', KEYS[1], unpack(expired))
  redis.call('ZREM', KEYS[2], unpack(expired))
end

-- A value longer than hash-max-listpack-value (64 bytes by default) makes Redis keep the hash as a
-- hashtable: a listpack would answer each field of a lookup's HMGET by a scan.
redis.call('HSETNX', KEYS[1], 'kvindex/hashtable', string.rep('-', 100))
for i = 7, #ARGV, 2 do
  local field = ARGV[i]
  local parts = {encodeRoute(digest, deadlineMs, ARGV[i + 1])}
  local latest = deadlineMs
  local old = redis.call('HGET', KEYS[1], field) or ''
  local at = 1
  while #parts < perField do
    local pod, d, after = routeAt(old, at)
    if not pod then break end
    if d >= now and pod ~= digest then
      parts[#parts + 1] = string.sub(old, at, after - 1)
      if d > latest then latest = d end
    end
    at = after
  end
  redis.call('HSET', KEYS[1], field, table.concat(parts))
  redis.call('ZADD', KEYS[2], string.format('%d', latest), field)
end

local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  local oldest = redis.call('ZPOPMIN', KEYS[2], over)
  local fields = {}
  for k = 1, #oldest, 2 do fields[#fields + 1] = oldest[k] end
  redis.call('HDEL', KEYS[1], unpack(fields))
end
for k = 1, 2 do
  local pttl = redis.call('PTTL', KEYS[k])
  if pttl < ttl then
    redis.call('PEXPIRE', KEYS[k], ttl)
  elseif pttl > SPEC_TTL_MAX_MS then
    redis.call('PEXPIRE', KEYS[k], SPEC_TTL_MAX_MS)
  end
end
return count
