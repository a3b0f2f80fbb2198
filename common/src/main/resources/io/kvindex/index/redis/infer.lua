-- kvindex inferred evictions, the writes: the mark that a pod's evictions are inferred (its
-- streams' owners set it) and the pod's touches, the blocks of observed requests (routers add
-- them). A touch stream is capped and expires after its last entry. inferred.lua reads both.
-- KEYS: 1 the pod's infer key ('mark') or its touch stream ('touch')
-- ARGV: 1 the operation; mark: 2 capacity, 3 ttl ms; touch: 2 rank, 3 block keys, 4 the
--       prediction's error in blocks, 5 most entries, 6 ttl ms, 7 the blocks the engine reported
--       cached
if ARGV[1] == 'mark' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
elseif ARGV[1] == 'touch' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'r', ARGV[2], 'k', ARGV[3], 'e', ARGV[4],
    'c', ARGV[7])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  return 1
end
return redis.error_reply('kvindex infer.lua: unknown operation ' .. tostring(ARGV[1]))
