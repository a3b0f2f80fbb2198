-- kvindex note: what a service knows about the index, kept for kvindex inspect: each field set to
-- Redis's clock (ms), the time it was last noted. Writers note in a group's meta the key mode of
-- each model they apply and the segment limit they apply with; routers note each model's keys in
-- the spec:models key (the only kind of key their user may write). A hash that would grow past
-- the field limit is emptied first (0: no limit).
-- LIBRARIES: lib
-- KEYS: 1 hash
-- ARGV: 1 limit (of fields, 0: none), 2.. fields
local limit = tonumber(ARGV[1])
if limit > 0 and redis.call('HLEN', KEYS[1]) + #ARGV - 1 > limit then
  redis.call('DEL', KEYS[1])
end
local now = nowMs()
for i = 2, #ARGV do
  redis.call('HSET', KEYS[1], ARGV[i], now)
end
return #ARGV - 1
