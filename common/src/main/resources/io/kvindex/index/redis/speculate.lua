-- kvindex speculate: a router sent a request to a pod; its blocks count there (flagged
-- speculative) until the deadline. One hash per pod, so the whole hash expires (PEXPIRE) when the
-- last route recorded for the pod does, even if no router is left to clean up; a hash grown past
-- the field limit is dropped first (speculative entries are hints).
-- KEYS: 1 the pod's speculative hash, 2 the group's speculation gate, which holds a deadline no
-- earlier than any speculative entry of the group's, so that lookups read no speculative hash
-- while no router speculates. Both are spec: keys: a router's Redis user may write no other.
-- A route lasts at most SPEC_TTL_MAX_MS; a gate or a hash expiry further ahead than that was not
-- written by this script, and is replaced.
-- ARGV: 1 ttl ms (1 to SPEC_TTL_MAX_MS), 2 field limit, 3.. block fields
local ttl = tonumber(ARGV[1])
if not ttl or ttl < 1 or ttl > SPEC_TTL_MAX_MS or ttl ~= math.floor(ttl) then
  return redis.error_reply('KVINDEX_SPEC_TTL a speculative route lasts 1 to ' .. SPEC_TTL_MAX_MS ..
    ' ms, not ' .. tostring(ARGV[1]))
end
local now = nowMs()
local deadlineMs = now + ttl
local deadline = string.format('%d', deadlineMs)
if redis.call('HLEN', KEYS[1]) + #ARGV - 2 > tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
end
-- A value longer than hash-max-listpack-value (64 bytes by default) makes Redis keep the hash as a
-- hashtable: lookups HMGET hundreds of fields from it, and a listpack answers each by a scan.
redis.call('HSETNX', KEYS[1], 'kvindex/hashtable', string.rep('-', 100))
local i, last = 3, #ARGV
while i <= last do
  local j = math.min(i + 255, last)
  local args = {}
  for k = i, j do
    args[#args + 1] = ARGV[k]
    args[#args + 1] = deadline
  end
  redis.call('HSET', KEYS[1], unpack(args))
  i = j + 1
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
elseif pttl > SPEC_TTL_MAX_MS then
  redis.call('PEXPIRE', KEYS[1], SPEC_TTL_MAX_MS)
end
local gate = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if gate < deadlineMs or gate > now + SPEC_TTL_MAX_MS then
  redis.call('SET', KEYS[2], deadline, 'PX', ttl)
end
return last - 2
