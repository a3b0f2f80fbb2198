-- kvindex resync: a request that the owners of a pod's streams purge them and replay what the
-- engine's ring covers. One stands per pod per interval, whoever asks: a hash with the note in
-- field 'n' and, once a stream's owner took it, a field 't<rank>' per rank, with the request's
-- PEXPIRE kept throughout. Each rank takes it once, whichever replica owns that rank.
-- KEYS: 1 the pod's resync key
-- ARGV: 1 'request' or 'take'; request: 2 note, 3 interval ms; take: 2 dp rank, 3 the taker's
--       call (unique to one take, the same in its retries: a retry after a lost reply gets the
--       note again, a later take does not)
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
if redis.call('HSETNX', KEYS[1], taken, ARGV[3]) == 1 or redis.call('HGET', KEYS[1], taken) == ARGV[3] then
  return note
end
return false
