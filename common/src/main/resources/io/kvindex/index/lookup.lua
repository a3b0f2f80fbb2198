#!lua flags=no-writes
-- kvindex lookup: candidates' holder slots, then block fields in growing chunks until the first
-- block no live candidate holds. Returns {pod records (nil when unknown or expired), values...}.
-- KEYS: 1 pods, 2 blocks
-- ARGV: 1 candidate count n, 2..n+1 pod fields, n+2.. block fields in prompt order
local n = tonumber(ARGV[1])
local pods = redis.call('HMGET', KEYS[1], unpack(ARGV, 2, n + 1))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local want, any = {}, false
for i = 1, n do
  local v = pods[i]
  if v then
    local a, b, c, d, e, f, g, h = string.byte(v, 1, 8)
    local deadline = ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h
    if deadline < now then
      pods[i] = false
    else
      for k = 9, #v, 4 do
        local s1, s2 = string.byte(v, k, k + 1)
        want[s1 * 256 + s2] = true
        any = true
      end
    end
  end
end
local out = {pods}
if not any then return out end
local i, last, chunk = n + 2, #ARGV, 8
while i <= last do
  local j = math.min(i + chunk - 1, last)
  local vals = redis.call('HMGET', KEYS[2], unpack(ARGV, i, j))
  for k = 1, j - i + 1 do
    local v = vals[k]
    if not v then return out end
    local held = false
    for e = 1, #v, 2 do
      local b1, b2 = string.byte(v, e, e + 1)
      if want[b1 * 16 + math.floor(b2 / 16)] then held = true; break end
    end
    if not held then return out end
    out[#out + 1] = v
  end
  i, chunk = j + 1, chunk * 2
end
return out
