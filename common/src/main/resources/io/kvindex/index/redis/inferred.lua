#!lua flags=no-writes
-- kvindex inferred evictions, the read routers make (infer.lua writes): whether a pod's evictions
-- are inferred.
-- KEYS: 1 the pod's infer key
-- ARGV: 1 the operation ('state')
if ARGV[1] == 'state' then
  return redis.call('GET', KEYS[1])
end
return redis.error_reply('kvindex inferred.lua: unknown operation ' .. tostring(ARGV[1]))
