#!lua flags=no-writes
-- kvindex identity: a group's epoch and the node history serving it (see lib.lua), for writers
-- that check, now and then, that the index they remember is still the one Redis holds.
-- KEYS: 1 meta
return {redis.call('HGET', KEYS[1], 'epoch') or '', nodeHistory()}
