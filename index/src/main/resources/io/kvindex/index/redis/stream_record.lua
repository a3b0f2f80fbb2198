-- kvindex library: the stream record (its Java type: StreamRecord), the value of a stream's field
-- in its group's streams hash: "<slot>|<watermark>" (slot 0 for none, the watermark '' for none),
-- then "|<seq>:<blocks done>:<digest>[:x]" while a call of several chunks is half applied (see
-- apply.lua), or "|s" for a staged rebuild that holds no slot yet (its history so far stored
-- nothing, and it stays staged until published or an unstaged batch is applied).

-- A stream record's slot (0 for none), watermark (nil for none), watermark as written (''), and
-- the batch being applied in chunks, if any: its sequence, the blocks of its call done, the digest
-- of the call's events, and whether the blocks done ended in a dropped token store; last, whether
-- it is a staged rebuild that holds no slot yet.
local function parseStream(rec)
  if not rec then return 0, nil, '' end
  local s, w, rest = string.match(rec, '^(%d+)|(%d*)(.*)$')
  local ps, pd, digest, tail = string.match(rest, '^|(%d+):(%d+):(%x+)(:?x?)$')
  return tonumber(s), tonumber(w), w, tonumber(ps), tonumber(pd), digest, tail == ':x', rest == '|s'
end

-- A stream record: the slot, the watermark as written ('' for none), and either the call half
-- applied (its first seq, blocks done, digest and whether they ended in a dropped token store) or
-- whether it is a staged rebuild that holds no slot yet.
local function encodeStream(slot, wmText, partSeq, partDone, digest, tailDropped, stagedEmpty)
  local rec = slot .. '|' .. wmText
  if partSeq then
    return rec .. '|' .. string.format('%d', partSeq) .. ':' .. string.format('%d', partDone) ..
      ':' .. digest .. (tailDropped and ':x' or '')
  end
  if stagedEmpty then return rec .. '|s' end
  return rec
end
