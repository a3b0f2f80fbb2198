-- kvindex lag: the owner of a stream reports how far it is behind its engine, so that routers do
-- not take what its lag explains for drift (lags.lua reads the reports). One hash per pod, a field
-- per rank: "<ms, Redis's clock>|<lag ms>"; PEXPIRE refreshed by each report.
-- LIBRARIES: lib
-- KEYS: 1 lag (the pod's lag key)
-- ARGV: 1 rank, 2 lag_ms, 3 ttl_ms
redis.call('HSET', KEYS[1], ARGV[1], nowMs() .. '|' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
