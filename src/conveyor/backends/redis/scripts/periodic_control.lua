-- periodic_control: pause, resume or ask "run now" of one schedule (conveyor schedules).
-- KEYS[1] base "{prefix}:"
-- ARGV[1] schedule name   ARGV[2] 'pause', 'resume' or 'run'
-- Derived: periodic:<name> (the schedule's hash, written by periodic_fire.lua).
-- Only a schedule a worker fired or planned exists (returns 0 otherwise, writes
-- nothing). periodic_fire.lua obeys the flags in its own script: a pause stops every
-- worker's next fire, and a "run now" (the server's time, kept until a worker takes it:
-- a second request before that is the same run) is enqueued once. Returns 1 if found.
local record = BASE .. 'periodic:' .. ARGV[1]
if redis.call('EXISTS', record) == 0 then return 0 end
if ARGV[2] == 'run' then
  redis.call('HSETNX', record, 'run_requested_at', fmt(now()))
else
  redis.call('HSET', record, 'paused', ARGV[2] == 'pause' and '1' or '0')
end
return 1
