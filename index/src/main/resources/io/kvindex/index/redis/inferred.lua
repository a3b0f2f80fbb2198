#!lua flags=no-writes
-- kvindex inferred evictions, the reads that write nothing (infer.lua writes): whether a pod's
-- evictions are inferred (routers ask), and what a stream's former owner left for the next one
-- (its model's size and the removals it decided and the index has not applied; the owner asks).
-- KEYS: 1 state (the pod's infer key or the stream's handover key)
-- ARGV (state): 1 op
if ARGV[1] == 'state' then
  return redis.call('GET', KEYS[1])
end
return redis.error_reply('kvindex inferred.lua: unknown operation ' .. tostring(ARGV[1]))
