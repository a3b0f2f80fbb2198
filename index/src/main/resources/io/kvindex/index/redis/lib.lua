-- kvindex script library, prepended to every index script when it is loaded (see Scripts), after
-- the libraries of the stored values (block_value.lua, segment_value.lua, slot_counts.lua,
-- pod_record.lua, stream_record.lua, route_value.lua), so each helper exists once. Leases are "token:owner". A
-- local function costs nothing until called.

-- The longest a speculative route may count, in ms (RedisPrefixIndex.MAX_SPECULATIVE_TTL): a
-- router's Redis user may write spec: keys directly, so speculate.lua refuses a longer route and
-- lookups ignore an entry, and routers a gate, whose deadline lies further ahead than this.
local SPEC_TTL_MAX_MS = 60000

-- Holder slots per group: an entry names its holder's slot in 12 bits, 0 meaning none.
local MAX_SLOT = 4095

-- Holder slots a new holder can take now: those GC freed, and those never handed out.
local function slotsAvailable(metaKey, freeKey)
  return redis.call('LLEN', freeKey) + MAX_SLOT - tonumber(redis.call('HGET', metaKey, 'next') or '0')
end

-- Redis's clock in ms.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Whether the lease key holds exactly this lease ("token:owner"): token and owner both, so an old
-- owner and a new one never both pass even if a lost index handed out the same token twice.
local function holdsLease(leaseKey, lease)
  return redis.call('GET', leaseKey) == lease
end

-- Whether the group's epoch (meta field 'epoch', created by init.lua) is the one the caller last
-- saw: after a FLUSHALL or a restart without persistence it is gone or new.
local function sameEpoch(metaKey, epoch)
  return redis.call('HGET', metaKey, 'epoch') == epoch
end

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

-- This process: its run id, new for every redis-server process (a restart, a failover). HSCAN
-- cursors only mean something to the process that issued them.
local function processId()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
end

-- Moves the group's slots generation. The node history beside it ('kvindex/node') moves only with
-- adoptNode, which changes the epoch too: a router that cached records at generation g never
-- mistakes the same number reached again on another node history for no change.
local function moveSlotsGeneration(blocksKey)
  redis.call('HINCRBY', blocksKey, 'kvindex/slots-generation', 1)
end

-- Writes a pod record and its copy in the blocks hash in one go. Routers cache pod records and
-- trust them while the group's slots generation stands still, so a change to the slots a record
-- lists moves it (see RedisLookups). old: the record before (nil for none); rec: nil deletes it.
local function writePodRecord(podsKey, blocksKey, podField, holderField, old, rec)
  if rec then
    redis.call('HSET', podsKey, podField, rec)
    redis.call('HSET', blocksKey, holderField, rec)
  else
    redis.call('HDEL', podsKey, podField)
    redis.call('HDEL', blocksKey, holderField)
  end
  if podPairs(old) ~= podPairs(rec) then
    moveSlotsGeneration(blocksKey)
  end
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

-- HMGET, HSET and HDEL of any number of fields, in chunks: Lua unpacks at most about 8000 values
-- into one call, and a big batch or a GC step at its largest budget has more.
local UNPACK_CHUNK = 512

local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, UNPACK_CHUNK do
    local last = math.min(i + UNPACK_CHUNK - 1, #fields)
    local part = redis.call('HMGET', key, unpack(fields, i, last))
    for k = 1, #part do out[i + k - 1] = part[k] or nil end
  end
  return out
end

-- pairs: field, value, field, value...
local function hset(key, pairs)
  for i = 1, #pairs, UNPACK_CHUNK * 2 do
    redis.call('HSET', key, unpack(pairs, i, math.min(i + UNPACK_CHUNK * 2 - 1, #pairs)))
  end
end

local function hdel(key, fields)
  for i = 1, #fields, UNPACK_CHUNK do
    redis.call('HDEL', key, unpack(fields, i, math.min(i + UNPACK_CHUNK - 1, #fields)))
  end
end
