-- kvindex init: record the index's group count, epoch and format once, copy the epoch into the
-- blocks hash (lookups read it there, with everything else, in one HMGET), and return all three as
-- recorded. The caller refuses a group count or a format other than its own.
-- KEYS: 1 meta, 2 blocks
-- ARGV: 1 group count, 2 a new epoch, used only if the group has none (a new or a lost index),
--       3 the caller's index format (recorded where none is, as in an index older than formats)
redis.call('HSETNX', KEYS[1], 'groups', ARGV[1])
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[2])
redis.call('HSETNX', KEYS[1], 'format', ARGV[3])
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if redis.call('HGET', KEYS[2], 'kvindex/epoch') ~= epoch then
  redis.call('HSET', KEYS[2], 'kvindex/epoch', epoch)
end
return {redis.call('HGET', KEYS[1], 'groups'), epoch, redis.call('HGET', KEYS[1], 'format')}
