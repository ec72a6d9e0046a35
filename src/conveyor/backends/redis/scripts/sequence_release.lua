-- sequence_release: let held jobs of blocked sequences go on (on_failure "block").
-- KEYS[1] base "{prefix}:"
-- ARGV[1] JSON array of job ids
-- Derived: job:<id>, ready:<queue>, scheduled, counts, wake (see _flow.lua).
-- A job is released only while it waits behind a failed job of its sequence; any
-- other id is left as it is. Returns a JSON array of the ids released.
local t = now()
local out = {}
for _, id in ipairs(cjson.decode(ARGV[1])) do
  if sequence_release(id, t) then out[#out + 1] = id end
end
flush_counts(K_COUNTS)
wake(K_WAKE, flow_woken)
if #out == 0 then return '[]' end
return cjson.encode(out)
