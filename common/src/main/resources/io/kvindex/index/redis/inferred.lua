#!lua flags=no-writes
-- kvindex inferred evictions, the reads (infer.lua writes): whether a pod's evictions are
-- inferred (routers ask) and the pod's touches after a cursor (its streams' owners read them).
-- A stream's handover (infer.lua) is read with 'state' too.
-- KEYS: 1 the pod's infer key or the stream's handover key ('state'), or the pod's touch stream
--       ('read', 'last')
-- ARGV: 1 the operation; read: 2 cursor (an entry id), 3 most entries
if ARGV[1] == 'state' then
  return redis.call('GET', KEYS[1])
elseif ARGV[1] == 'read' then
  -- id, rank, keys, error, cached blocks of each entry after the cursor, flat, oldest first (an
  -- entry without 'c', from a router that did not send it, restores nothing)
  local out = {}
  for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '(' .. ARGV[2], '+', 'COUNT', ARGV[3])) do
    local fields = {}
    for i = 1, #entry[2], 2 do
      fields[entry[2][i]] = entry[2][i + 1]
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = fields['r'] or '0'
    out[#out + 1] = fields['k'] or ''
    out[#out + 1] = fields['e'] or '0'
    out[#out + 1] = fields['c'] or '0'
  end
  return out
elseif ARGV[1] == 'last' then
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if #last == 0 then
    return '0-0'
  end
  return last[1][1]
end
return redis.error_reply('kvindex inferred.lua: unknown operation ' .. tostring(ARGV[1]))
