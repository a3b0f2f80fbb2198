-- kvindex resync: a request that the owner of a pod's streams purge them and replay what the
-- engine's ring covers. One stands per pod per interval, whoever asks: 'R' .. note until the owner
-- takes it, then 'T' .. note, with the request's PX kept either way.
-- KEYS: 1 the pod's resync key
-- ARGV: 1 'request' or 'take'; request: 2 note, 3 interval ms
if ARGV[1] == 'request' then
  if redis.call('SET', KEYS[1], 'R' .. ARGV[2], 'NX', 'PX', ARGV[3]) then
    return 1
  end
  return 0
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == 'R' then
  redis.call('SET', KEYS[1], 'T' .. string.sub(v, 2), 'XX', 'KEEPTTL')
  return string.sub(v, 2)
end
return false
