#!lua flags=no-writes
-- kvindex lags: the reports of a pod's streams (lag.lua writes them) and Redis's clock, which
-- their times are in: {seconds, microseconds, rank, report, rank, report, ...}.
-- KEYS: 1 lag (the pod's lag key)
local out = redis.call('TIME')
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do
  out[#out + 1] = v
end
return out
