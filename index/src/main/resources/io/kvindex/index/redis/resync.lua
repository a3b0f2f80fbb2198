-- kvindex resync: a request that the owners of a pod's streams purge them and replay what the
-- engine's ring covers. One stands per pod per interval, whoever asks: a hash with the note in
-- field 'n' and, once a stream's owner took it, a field 't<rank>' per rank, with the request's
-- PEXPIRE kept throughout. Each rank takes it once, whichever replica owns that rank, and no
-- stream takes one within the spacing of the last it took: the group's activity hash (which
-- routers cannot write) keeps when, 'r' + stream field -> ms, so however often a pod is asked for
-- (by routers with short intervals, or by writes to the resync key itself), it is resynced at most
-- once per spacing.
-- LIBRARIES: lib
-- KEYS (request): 1 resync (the pod's resync key)
-- ARGV (request): 1 op, 2 note, 3 interval_ms
-- KEYS (take): 1 resync (the pod's resync key), 2 activity (the group's activity hash)
-- ARGV (take): 1 op, 2 rank (the dp rank), 3 call (the taker's, unique to one take, the same in
--       its retries: a retry after a lost reply gets the note again, a later take does not),
--       4 resynced_field (the stream's field in the activity hash), 5 spacing_ms
if ARGV[1] == 'request' then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
  end
  redis.call('HSET', KEYS[1], 'n', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
local note = redis.call('HGET', KEYS[1], 'n')
if not note then
  return false
end
local taken = 't' .. ARGV[2]
local by = redis.call('HGET', KEYS[1], taken)
if by then
  if by == ARGV[3] then
    return note -- a retry of the take that took it
  end
  return false
end
local now = nowMs()
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[4]) or '')
if last and now - last < tonumber(ARGV[5]) then
  return false
end
redis.call('HSET', KEYS[1], taken, ARGV[3])
redis.call('HSET', KEYS[2], ARGV[4], now)
return note
