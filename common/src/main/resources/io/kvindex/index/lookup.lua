#!lua flags=no-writes
-- kvindex lookup: candidates' holder slots, then block fields in growing chunks until the first
-- block no live candidate holds, confirmed or speculatively.
-- Returns {pod records (nil when unknown or expired), speculative marks, values...}: value i is
-- block i's holder entries ('' when it is held only speculatively), mark i the 1-based indexes of
-- the candidates holding block i speculatively, two bytes each, big-endian ('' for none).
-- KEYS: 1 pods, 2 blocks, 3..n+2 the candidates' speculative hashes (block field -> deadline ms)
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
local spec = {}
for i = 1, n do
  if KEYS[2 + i] and redis.call('EXISTS', KEYS[2 + i]) == 1 then spec[#spec + 1] = i end
end
local marks = {}
local out = {pods, marks}
if not any and #spec == 0 then return out end
local i, last, chunk = n + 2, #ARGV, 8
while i <= last do
  local j = math.min(i + chunk - 1, last)
  local vals = redis.call('HMGET', KEYS[2], unpack(ARGV, i, j))
  local specVals = {}
  for s = 1, #spec do
    specVals[s] = redis.call('HMGET', KEYS[2 + spec[s]], unpack(ARGV, i, j))
  end
  for k = 1, j - i + 1 do
    local v = vals[k]
    local held = false
    if v then
      for e = 1, #v, 2 do
        local b1, b2 = string.byte(v, e, e + 1)
        if want[b1 * 16 + math.floor(b2 / 16)] then held = true; break end
      end
    end
    local mark = ''
    for s = 1, #spec do
      local d = specVals[s][k]
      if d and tonumber(d) >= now then
        mark = mark .. string.char(math.floor(spec[s] / 256), spec[s] % 256)
        held = true
      end
    end
    if not held then return out end
    out[#out + 1] = v or ''
    marks[#marks + 1] = mark
  end
  i, chunk = j + 1, chunk * 2
end
return out
