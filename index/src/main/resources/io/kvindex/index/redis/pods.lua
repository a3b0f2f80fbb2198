#!lua flags=no-writes
-- kvindex pods: the pod fields of one model whose liveness deadline has not passed.
-- LIBRARIES: pod_record, lib
-- KEYS: 1 pods
-- ARGV: 1 model_prefix (the model's pod-field prefix: u32 length + model, UTF-8)
local now = nowMs()
local prefix, n = ARGV[1], #ARGV[1]
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local field = all[i]
  if string.sub(field, 1, n) == prefix and (decodeDeadline(all[i + 1]) or -1) >= now then
    out[#out + 1] = field
  end
end
return out
