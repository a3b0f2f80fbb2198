#!lua flags=no-writes
-- kvindex identity: a group's epoch and the node history serving it (see lib.lua), for writers
-- that check, now and then, that the index they remember is still the one Redis holds; with the
-- blocks key, also the node history the group's data was written on ('' for none recorded), for
-- routers that verify, after a pause in their reads, that it is the one serving it (adoptNode).
-- KEYS: 1 meta, 2 blocks (optional)
local recorded = KEYS[2] and redis.call('HGET', KEYS[2], 'kvindex/node') or ''
return {redis.call('HGET', KEYS[1], 'epoch') or '', nodeHistory(), recorded}
