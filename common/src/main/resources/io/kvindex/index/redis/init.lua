-- kvindex init: record the index's group count once, and return the recorded one.
-- KEYS: 1 meta
-- ARGV: 1 group count
redis.call('HSETNX', KEYS[1], 'groups', ARGV[1])
return redis.call('HGET', KEYS[1], 'groups')
