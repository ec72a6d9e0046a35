-- queue_pause: set or clear the paused flag of one queue (conveyor queues pause|resume).
-- KEYS[1] base "{prefix}:"   KEYS[2] paused set   KEYS[3] wake list
-- ARGV[1] queue   ARGV[2] '1' pause, '0' resume
-- The claim script reads the paused set itself, so a pause needs nothing else. A resume
-- wakes idle workers blocked on the wake list, so they claim at once instead of at the
-- end of their wait. Returns 1 when the flag changed.
if ARGV[2] == '1' then
  return redis.call('SADD', KEYS[2], ARGV[1])
end
local changed = redis.call('SREM', KEYS[2], ARGV[1])
if changed == 1 then wake(KEYS[3], 64) end
return changed
