#!lua flags=no-writes
-- kvindex time: the clock of the node serving a group (KEYS[1], any key of the group, routes the
-- call there on a cluster). Returns {seconds, microseconds} as TIME does.
-- KEYS: 1 group_key (any key of the group)
return redis.call('TIME')
