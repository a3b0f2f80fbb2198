-- kvindex library: a speculative route field's value in a group's routes hash (its Java type:
-- RouteValue; speculate.lua writes it, lookups read it in Java): the latest route of each of the
-- field's last pods, newest first, each the pod's digest (8 bytes), the route's deadline (ms,
-- Redis's clock, 6 bytes big-endian), the route's blocks in the field's segment or span (2 bytes,
-- big-endian), then the keys of every ROUTE_KEY_EVERY-th of those blocks and of the last (8 each).
-- A speculate call gives each field's route from its blocks on, as the script stores it.

local byte, sub, char = string.byte, string.sub, string.char

local ROUTE_HEADER = 16
local ROUTE_KEY_EVERY = 16

-- The route to the pod whose digest (8 bytes) is given, lasting until deadlineMs, whose blocks
-- and kept keys are blocksAndKeys (as a speculate call gives them).
local function encodeRoute(digest, deadlineMs, blocksAndKeys)
  local ms, parts = deadlineMs, {}
  for k = 6, 1, -1 do
    parts[k] = ms % 256
    ms = (ms - ms % 256) / 256
  end
  return digest .. char(unpack(parts)) .. blocksAndKeys
end

-- The route that starts at byte at of a value: its pod's digest, its deadline (ms) and where the
-- route after it starts; nil when no whole route header starts there.
local function routeAt(v, at)
  if at + ROUTE_HEADER - 1 > #v then return nil end
  local a, b, c, d, e, f, n1, n2 = byte(v, at + 8, at + 15)
  local deadline = ((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f
  local kept = math.ceil((n1 * 256 + n2) / ROUTE_KEY_EVERY)
  return sub(v, at, at + 7), deadline, at + ROUTE_HEADER + 8 * kept
end
