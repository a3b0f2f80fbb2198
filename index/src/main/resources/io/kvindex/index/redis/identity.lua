#!lua flags=no-writes
-- kvindex identity: a group's epoch and the node history serving it (see node.lua), for writers
-- that check, now and then, that the index they remember is still the one Redis holds; with the
-- blocks key, also the node history the group's data was written on ('' for none recorded) and
-- whether the node serving it may serve that data as it is (1: it is the node the data was written
-- on, none is recorded, or the data moved here whole with its slot; 0: a failover or a restart
-- that no writer has reset yet, see adoptNode), for routers that verify it after a pause in their
-- reads and ingesters that tell a move from a loss.
-- LIBRARIES: node
-- KEYS: 1 meta, 2 blocks (optional)
local live = nodeHistory()
local recorded = KEYS[2] and redis.call('HGET', KEYS[2], 'kvindex/node') or ''
local trusted = recorded == '' or recorded == live or movedHere(KEYS[1], KEYS[2], recorded)
return {redis.call('HGET', KEYS[1], 'epoch') or '', live, recorded, trusted and 1 or 0}
