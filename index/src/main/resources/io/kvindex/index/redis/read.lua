#!lua flags=no-writes
-- kvindex read: one field of one hash of the group (stream records, metadata).
-- KEYS: 1 hash
-- ARGV: 1 field
return redis.call('HGET', KEYS[1], ARGV[1])
