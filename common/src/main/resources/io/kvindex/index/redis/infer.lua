-- kvindex inferred evictions, the writes: the mark that a pod's evictions are inferred (its
-- streams' owners set it) and the pod's touches, the blocks of observed requests (routers add
-- them). A touch stream is capped and expires after its last entry. inferred.lua reads both.
-- KEYS: 1 the pod's infer key ('mark') or its touch stream ('touch'), 2 (touch) the ids of the
--       pod's latest touches (8 bytes each, newest first)
-- ARGV: 1 the operation; mark: 2 capacity, 3 ttl ms; touch: 2 rank, 3 block keys, 4 the
--       prediction's error in blocks, 5 most entries, 6 ttl ms, 7 the touch's id (8 bytes, the
--       same in its retries: a retry after a lost reply adds nothing, 0)
local RECENT_IDS = 16
if ARGV[1] == 'mark' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
elseif ARGV[1] == 'touch' then
  local recent = redis.call('GET', KEYS[2]) or ''
  for at = 1, #recent - 7, 8 do
    if string.sub(recent, at, at + 7) == ARGV[7] then
      return 0
    end
  end
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'r', ARGV[2], 'k', ARGV[3], 'e', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('SET', KEYS[2], string.sub(ARGV[7] .. recent, 1, 8 * RECENT_IDS), 'PX', ARGV[6])
  return 1
end
return redis.error_reply('kvindex infer.lua: unknown operation ' .. tostring(ARGV[1]))
