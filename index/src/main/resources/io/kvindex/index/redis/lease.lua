-- kvindex lease operations on one stream's lease key ("token:owner", expiring).
-- KEYS: 1 meta, 2 lease
-- ARGV: 1 op (acquire|renew|release), 2 owner, 3 ttl_ms, 4 token (renew, release)
-- acquire returns the fencing token (string) or false; renew and release return 1 or 0.
local cur = redis.call('GET', KEYS[2])
local op = ARGV[1]
if op == 'acquire' then
  if cur then
    local tok, owner = string.match(cur, '^(%d+):(.*)$')
    if owner == ARGV[2] then
      redis.call('PEXPIRE', KEYS[2], ARGV[3])
      return tok
    end
    return false
  end
  local tok = redis.call('HINCRBY', KEYS[1], 'fence', 1)
  redis.call('SET', KEYS[2], tok .. ':' .. ARGV[2], 'PX', ARGV[3])
  return tostring(tok)
end
if cur ~= ARGV[4] .. ':' .. ARGV[2] then return 0 end
if op == 'renew' then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
else
  redis.call('DEL', KEYS[2])
end
return 1
