-- kvindex init: record the index's group count, epoch and format once, copy the epoch into the
-- blocks hash (lookups read it there, with everything else, in one HMGET), and return the group
-- count, the epoch and the format as recorded. The caller refuses a group count or a format other
-- than its own. A group created here also records the version of what its scripts store: one an
-- earlier version created has none (and no exact block counts).
-- KEYS: 1 meta, 2 blocks
-- ARGV: 1 groups (the group count), 2 epoch (a new one, used only if the group has none: a new or
--       a lost index), 3 version (the stored version), 4 format (the caller's index format,
--       recorded in a group created here; a group that exists without one is older than formats,
--       and of format 1)
redis.call('HSETNX', KEYS[1], 'groups', ARGV[1])
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[2]) == 1 then
  redis.call('HSET', KEYS[1], 'version', ARGV[3])
  redis.call('HSETNX', KEYS[1], 'format', ARGV[4])
else
  redis.call('HSETNX', KEYS[1], 'format', '1')
end
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if redis.call('HGET', KEYS[2], 'kvindex/epoch') ~= epoch then
  redis.call('HSET', KEYS[2], 'kvindex/epoch', epoch)
end
return {redis.call('HGET', KEYS[1], 'groups'), epoch, redis.call('HGET', KEYS[1], 'format')}
