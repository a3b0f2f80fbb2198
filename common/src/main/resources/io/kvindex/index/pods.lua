#!lua flags=no-writes
-- kvindex pods: the pod fields of one model whose liveness deadline has not passed.
-- KEYS: 1 pods
-- ARGV: 1 the model's pod-field prefix (u32 length + model, UTF-8)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix, n = ARGV[1], #ARGV[1]
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local field, v = all[i], all[i + 1]
  if string.sub(field, 1, n) == prefix then
    local a, b, c, d, e, f, g, h = string.byte(v, 1, 8)
    local deadline = ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h
    if deadline >= now then out[#out + 1] = field end
  end
end
return out
