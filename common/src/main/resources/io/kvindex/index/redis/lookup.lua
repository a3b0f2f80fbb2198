#!lua flags=no-writes
-- kvindex lookup while speculation is on: candidates' holder slots, then block fields in growing
-- chunks until the first block no live candidate holds, confirmed or speculatively. Lookups of a
-- group whose speculation gate has passed are plain HMGETs instead (see RedisPrefixIndex).
-- Returns {pod records (nil when unknown or expired), then (value, mark, run) triples}: a run of
-- consecutive blocks whose holder entries are value ('' when held only speculatively) and whose
-- speculative holders are mark (the candidates' 1-based indexes, two bytes each, big-endian; ''
-- for none). Runs keep the reply and the conversions small: shared prefixes repeat values.
-- KEYS: 1 pods, 2 blocks, 3..n+2 the candidates' speculative hashes (block field -> deadline ms)
-- ARGV: 1 candidate count n, 2..n+1 pod fields, n+2.. block fields in prompt order
local n = tonumber(ARGV[1])
local pods = redis.call('HMGET', KEYS[1], unpack(ARGV, 2, n + 1))
local now = nowMs()
local want, any = {}, false
for i = 1, n do
  local v = pods[i]
  if v then
    if (decodeDeadline(v) or -1) < now then
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
if redis.call('EXISTS', unpack(KEYS, 3)) > 0 then
  for i = 1, n do
    if redis.call('EXISTS', KEYS[2 + i]) == 1 then spec[#spec + 1] = i end
  end
end
local out = {pods}
if not any and #spec == 0 then return out end
local prevV, prevMark, run = nil, nil, 0
local checkedV, checkedHeld = '', false
local function flush()
  if run > 0 then
    out[#out + 1] = prevV
    out[#out + 1] = prevMark
    out[#out + 1] = run
  end
end
local i, last, chunk = n + 2, #ARGV, 8
while i <= last do
  local j = math.min(i + chunk - 1, last)
  local vals = redis.call('HMGET', KEYS[2], unpack(ARGV, i, j))
  local specVals = {}
  for s = 1, #spec do
    specVals[s] = redis.call('HMGET', KEYS[2 + spec[s]], unpack(ARGV, i, j))
  end
  for k = 1, j - i + 1 do
    local v = vals[k] or ''
    -- A value of odd length starts with the block's 11-byte locator; runs compare entries only.
    if #v % 2 == 1 then v = string.sub(v, 12) end
    if v ~= checkedV then
      checkedV, checkedHeld = v, false
      for e = 1, #v, 2 do
        local b1, b2 = string.byte(v, e, e + 1)
        if want[b1 * 16 + math.floor(b2 / 16)] then checkedHeld = true; break end
      end
    end
    local held = checkedHeld
    local mark = ''
    for s = 1, #spec do
      -- A deadline further ahead than any route may last was not written by speculate.lua.
      local d = tonumber(specVals[s][k] or '')
      if d and d >= now and d <= now + SPEC_TTL_MAX_MS then
        mark = mark .. string.char(math.floor(spec[s] / 256), spec[s] % 256)
        held = true
      end
    end
    if not held then
      flush()
      return out
    end
    -- Lua interns strings: comparing values and marks is O(1).
    if v == prevV and mark == prevMark then
      run = run + 1
    else
      flush()
      prevV, prevMark, run = v, mark, 1
    end
  end
  i, chunk = j + 1, math.min(chunk * 2, 4096)
end
flush()
return out
