-- kvindex library: the node history a group's data is served from, and the reset on a new one
-- (adoptNode), which the writes that can show slots (apply, purge, publish, sweep) run first.
-- LIBRARIES: pod_record, stream_record

-- The history of the data this node serves: its replication id, which a promoted replica
-- changes. Read here, in the script, so that a failover between a caller's read and the script's
-- run cannot go unseen.
local function nodeHistory()
  return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
end

-- The Redis Cluster node running the script: its id ('' outside a cluster), which a restart keeps
-- and a failover or a slot migration changes.
local function clusterNode()
  if not string.find(redis.call('INFO', 'cluster'), 'cluster_enabled:1', 1, true) then return '' end
  return redis.call('CLUSTER', 'MYID')
end

-- Records the node history the group's data is now served from, and the cluster node serving it
-- ('kvindex/node-id': "<history>@<node id>", which tells a later node where the data came from).
local function recordNode(blocksKey, live)
  redis.call('HSET', blocksKey, 'kvindex/node', live)
  local node = clusterNode()
  if node ~= '' then
    redis.call('HSET', blocksKey, 'kvindex/node-id', live .. '@' .. node)
  else
    redis.call('HDEL', blocksKey, 'kvindex/node-id')
  end
end

-- Whether the group's data, written on the node history `recorded`, came to this node whole with
-- its hash slot (CLUSTER SETSLOT and MIGRATE): then nothing was lost and nothing need be reset. A
-- migration moves each key as it is (the source deletes it once the target has it), and no script
-- of ours runs while some of its keys have moved and others have not (TRYAGAIN), so the keys arrive
-- as one state. A failover is different: the promoted replica may lack acknowledged writes. So the
-- data counts as moved only on proof, from what this node can see:
-- * the node it was written on is recorded (with that history) and is not this node (a restart,
--   or this node promoted back, keeps its id);
-- * this node has not been promoted from a replica since it started (its master_replid2 is
--   unset): a promoted replica may lack what its primary had, the keys a migration restored there
--   among them;
-- * the recorded node is still a healthy primary in this node's view of the cluster (a failed-over
--   one is failed, a replica, or gone), and no primary is failing or failed anywhere (a failover
--   in progress or just done, such as the target's own after the migration);
-- * the meta and blocks keys are both here with the same epoch (both moved).
-- Anything else resets as a failover does: a failover after a migration the group saw no write
-- on, and also a migration to a node that was once promoted (a false reset, never a false trust).
local function movedHere(metaKey, blocksKey, recorded)
  local history, from = string.match(redis.call('HGET', blocksKey, 'kvindex/node-id') or '',
    '^(%w+)@(%w+)$')
  if history ~= recorded then return false end
  local here = clusterNode()
  if here == '' or here == from then return false end
  local previous = string.match(redis.call('INFO', 'replication'), 'master_replid2:(%w+)')
  if not previous or not string.match(previous, '^0+$') then return false end
  local epoch = redis.call('HGET', metaKey, 'epoch')
  if not epoch or redis.call('HGET', blocksKey, 'kvindex/epoch') ~= epoch then return false end
  local healthy = false
  for line in string.gmatch(redis.call('CLUSTER', 'NODES'), '[^\n]+') do
    local id, flags = string.match(line, '^(%w+) %S+ (%S+)')
    if flags then
      local primary = string.find(flags, 'master', 1, true)
      local failing = string.find(flags, 'fail', 1, true)
      if primary and failing then return false end
      if id == from then
        healthy = primary and not string.find(flags, 'handshake', 1, true)
          and not string.find(flags, 'noaddr', 1, true)
      end
    end
  end
  return healthy and true or false
end

-- The first write on a node history other than the one the group's data was written on (a
-- replica promoted, which may have missed the last acknowledged writes; a restart that lost them)
-- takes nothing it holds on trust: in this one call, every stream's slot is retired (GC strips
-- the entries) and its watermark forgotten, every pod record lists no slot, and the epoch becomes
-- one bound to the new node history, so every writer's next call is RESET (it replays what its
-- engine's ring covers) and every router drops what it cached. Lookups that find the recorded node
-- history is not the live one credit nothing until this has run (identity.lua). O(streams + pods of
-- the group), once per node change. A group with no node history recorded (a new one), or whose
-- data moved here whole with its slot (movedHere), records the live one and keeps its data.
-- Returns whether the group was reset.
local function adoptNode(metaKey, streamsKey, podsKey, deadKey, blocksKey, holderPrefix)
  local live = nodeHistory()
  local recorded = redis.call('HGET', blocksKey, 'kvindex/node')
  if recorded == live then return false end
  if not recorded or movedHere(metaKey, blocksKey, recorded) then
    recordNode(blocksKey, live)
    return false
  end
  recordNode(blocksKey, live)
  local pass = redis.call('HGET', metaKey, 'pass') or '0'
  local streams = redis.call('HGETALL', streamsKey)
  for i = 1, #streams, 2 do
    local slot = parseStream(streams[i + 1])
    if slot ~= 0 then redis.call('HSET', deadKey, slot, pass) end
    redis.call('HSET', streamsKey, streams[i], encodeStream(0, ''))
  end
  local pods = redis.call('HGETALL', podsKey)
  for i = 1, #pods, 2 do
    local old = pods[i + 1]
    writePodRecord(podsKey, blocksKey, pods[i], holderPrefix .. pods[i], old, podDeadlineBytes(old))
  end
  moveSlotsGeneration(blocksKey)
  local epoch = redis.sha1hex((redis.call('HGET', metaKey, 'epoch') or '') .. '/' .. live)
  redis.call('HSET', metaKey, 'epoch', epoch)
  redis.call('HSET', blocksKey, 'kvindex/epoch', epoch)
  return true
end

-- The holder-field prefix, from a pod's holder field and its pod field (the field ends with it).
local function holderPrefixOf(holderField, podField)
  return string.sub(holderField, 1, #holderField - #podField)
end
