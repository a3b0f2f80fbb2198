-- kvindex incarnation: the engine incarnation (its process start time) a stream's entries came
-- from, as its owners confirmed it: one key per stream, so that no other rank's owner moves it.
-- An owner reads it ('get') and compares it with what the engine's /metrics says; once a restart
-- that showed has been purged, it records the new one ('set') only where the record still holds
-- the one it read, or already holds the new one: a compare-and-set, so that a retry after a lost
-- reply succeeds as the first attempt did, and nobody's record is replaced unseen.
-- KEYS: 1 incarnation (the stream's incarnation key)
-- ARGV (get): 1 op
-- ARGV (set): 1 op, 2 expected (the incarnation expected, '' for none), 3 incarnation (the new
--       one), 4 ttl_ms
-- get returns the incarnation or false; set returns 1 when the record holds the new one, else 0.
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == 'get' then
  return cur
end
if cur == ARGV[3] or (cur or '') == ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  return 1
end
return 0
