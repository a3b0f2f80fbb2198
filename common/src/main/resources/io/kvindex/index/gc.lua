-- kvindex garbage collection step: HSCAN a few block fields, strip entries of dead slots, and
-- free a dead slot once a whole pass that started after its death has completed.
-- KEYS: 1 meta, 2 blocks, 3 dead, 4 free
-- ARGV: 1 HSCAN count
-- Returns {done (0|1), fields scanned, entries removed, slots freed}
local deadList = redis.call('HGETALL', KEYS[3])
if #deadList == 0 then return {1, 0, 0, 0} end
local dead = {}
for k = 1, #deadList, 2 do dead[tonumber(deadList[k])] = tonumber(deadList[k + 1]) end

local pass = tonumber(redis.call('HGET', KEYS[1], 'pass') or '0')
local cursor = redis.call('HGET', KEYS[1], 'cursor')
if not cursor then
  pass = pass + 1
  cursor = '0'
  redis.call('HSET', KEYS[1], 'pass', pass)
end

local res = redis.call('HSCAN', KEYS[2], cursor, 'COUNT', ARGV[1])
local items = res[2]
local removed = 0
local out, del = {}, {}
for k = 1, #items, 2 do
  local v = items[k + 1]
  if #items[k] ~= 18 then
    -- not a block field (a pod's holder record, the speculation gate): never an entry list
  elseif #v == 2 then
    local b1, b2 = string.byte(v, 1, 2)
    if dead[b1 * 16 + math.floor(b2 / 16)] then
      del[#del + 1] = items[k]
      removed = removed + 1
    end
  else
    local keep, changed = {}, false
    for e = 1, #v, 2 do
      local b1, b2 = string.byte(v, e, e + 1)
      if dead[b1 * 16 + math.floor(b2 / 16)] then
        changed = true
        removed = removed + 1
      else
        keep[#keep + 1] = string.sub(v, e, e + 1)
      end
    end
    if changed then
      if #keep == 0 then
        del[#del + 1] = items[k]
      else
        out[#out + 1] = items[k]
        out[#out + 1] = table.concat(keep)
      end
    end
  end
end
if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
if #del > 0 then redis.call('HDEL', KEYS[2], unpack(del)) end

local freed = 0
if res[1] == '0' then
  redis.call('HDEL', KEYS[1], 'cursor')
  local remaining = 0
  for s, died in pairs(dead) do
    if died < pass then
      redis.call('HDEL', KEYS[3], s)
      redis.call('RPUSH', KEYS[4], s)
      freed = freed + 1
    else
      remaining = remaining + 1
    end
  end
  return {remaining == 0 and 1 or 0, #items / 2, removed, freed}
end
redis.call('HSET', KEYS[1], 'cursor', res[1])
return {0, #items / 2, removed, freed}
