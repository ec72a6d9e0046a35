-- job_event_send: store an event for a job; wake the job if it waits for that name.
-- KEYS[1] base "{prefix}:"   KEYS[2] counts hash   KEYS[3] wake list   KEYS[4] waiting zset
-- ARGV[1] job id   ARGV[2] event name   ARGV[3] event JSON [name, payload]
-- Derived: job:<id>, steps:<id>, events:<id>, ready:<queue>.
-- Atomic, so a concurrent wait (job_event_wait) either parked before (woken here) or
-- runs after and finds the event. Returns -1 (no such job), 1 (woken) or 0 (stored).
-- The wake is _flow.lua's wake_waiting, which also wakes a join at its child's end.
local id = ARGV[1]
local key = k_job(id)
if redis.call('EXISTS', key) == 0 then return -1 end
redis.call('RPUSH', k_events(id), ARGV[3])
redis.call('HSET', key, 'durable', '1') -- its finish expires events:<id> too
if not wake_waiting(id, ARGV[2], now()) then return 0 end
flush_counts(KEYS[2])
wake(KEYS[3], 1)
return 1
