-- kvindex script library: the helpers many scripts share (the clock, the lease and epoch checks,
-- the holder slots left, HMGET/HSET/HDEL in chunks). Leases are "token:owner". Scripts prepends a
-- library only to the scripts that name it in their LIBRARIES line.

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

-- This process: its run id, new for every redis-server process (a restart, a failover). HSCAN
-- cursors only mean something to the process that issued them.
local function processId()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
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
