-- kvindex speculate: a router sent a request to a pod; its blocks count there (flagged
-- speculative) until the deadline. One hash per pod, so the whole hash expires (PEXPIRE) when the
-- last route recorded for the pod does, even if no router is left to clean up; a hash grown past
-- the field limit is dropped first (speculative entries are hints).
-- KEYS: 1 the pod's speculative hash, 2 the group's speculation gate, which holds a deadline no
-- earlier than any speculative entry of the group's, so that lookups read no speculative hash
-- while no router speculates. Both are spec: keys: a router's Redis user may write no other.
-- ARGV: 1 ttl ms, 2 field limit, 3.. block fields
local ttl = tonumber(ARGV[1])
local deadlineMs = nowMs() + ttl
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
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if tonumber(redis.call('GET', KEYS[2]) or '0') < deadlineMs then
  redis.call('SET', KEYS[2], deadline, 'PX', ttl)
end
return last - 2
