#!lua flags=no-writes
-- kvindex lookup in one call: candidates' holder slots, then block fields in growing chunks until
-- the first block no live candidate holds. Lookups are plain HMGETs (see RedisPrefixIndex); this
-- runs only when the slots generation moved between two reads of one lookup, so that its answer
-- comes from one state of the index.
-- Returns {pod records (nil when unknown or expired), then (value, run) pairs}: a run of
-- consecutive blocks whose holder entries are value. Runs keep the reply and the conversions
-- small: shared prefixes repeat values.
-- LIBRARIES: block_value, pod_record, lib
-- KEYS: 1 pods, 2 blocks
-- ARGV: 1 candidates (their count n), 2.. fields (the n candidates' pod fields, then the block
--       fields in prompt order)
local n = tonumber(ARGV[1])
local pods = redis.call('HMGET', KEYS[1], unpack(ARGV, 2, n + 1))
local now = nowMs()
local want, any = {}, false
for i = 1, n do
  local v = pods[i]
  if v then
    if (decodeDeadline(v) or -1) < now then
      pods[i] = false
    elseif podSlotsInto(v, want) then
      any = true
    end
  end
end
local out = {pods}
if not any then return out end
local prevV, run = nil, 0
local checkedV, checkedHeld = '', false
local function flush()
  if run > 0 then
    out[#out + 1] = prevV
    out[#out + 1] = run
  end
end
local i, last, chunk = n + 2, #ARGV, 8
while i <= last do
  local j = math.min(i + chunk - 1, last)
  local vals = redis.call('HMGET', KEYS[2], unpack(ARGV, i, j))
  for k = 1, j - i + 1 do
    local v = vals[k] or ''
    -- Runs compare entries only, without a located value's locator.
    if isLocated(v) then v = string.sub(v, firstEntry(v)) end
    if v ~= checkedV then
      checkedV, checkedHeld = v, heldByAny(v, 1, #v + 1, want)
    end
    if not checkedHeld then
      flush()
      return out
    end
    -- Lua interns strings: comparing values is O(1).
    if v == prevV then
      run = run + 1
    else
      flush()
      prevV, run = v, 1
    end
  end
  i, chunk = j + 1, math.min(chunk * 2, 4096)
end
flush()
return out
