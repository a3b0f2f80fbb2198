-- kvindex inferred evictions, the writes: the mark that a pod's evictions are inferred (its
-- streams' owners set it), the pod's touches, the blocks of observed requests (routers add them),
-- and what a stream's owner leaves for the stream's next owner (its model's size and the removals
-- it decided and the index has not applied). A touch stream is capped and expires after its last
-- entry. inferred.lua reads them.
-- KEYS: 1 the pod's infer key ('mark'), its touch stream ('touch') or the stream's handover key
--       ('handover')
-- ARGV: 1 the operation; mark: 2 capacity, 3 ttl ms; touch: 2 rank, 3 block keys, 4 the
--       prediction's error in blocks, 5 most entries, 6 ttl ms, 7 the blocks the engine reported
--       cached; handover: 2 the value ("<size>|" then the removals, 8 bytes each), 3 ttl ms
if ARGV[1] == 'mark' or ARGV[1] == 'handover' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
elseif ARGV[1] == 'touch' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'r', ARGV[2], 'k', ARGV[3], 'e', ARGV[4],
    'c', ARGV[7])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  return 1
end
return redis.error_reply('kvindex infer.lua: unknown operation ' .. tostring(ARGV[1]))
