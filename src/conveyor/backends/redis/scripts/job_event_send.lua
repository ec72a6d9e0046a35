-- job_event_send: store an event for a job; wake the job if it waits for that name.
-- KEYS[1] base "{prefix}:"   KEYS[2] counts hash   KEYS[3] wake list   KEYS[4] waiting zset
-- ARGV[1] job id   ARGV[2] event name   ARGV[3] event JSON [name, payload]
-- Derived: job:<id>, steps:<id>, events:<id>, ready:<queue>.
-- Atomic, so a concurrent wait (job_event_wait) either parked before (woken here) or
-- runs after and finds the event. Returns -1 (no such job), 1 (woken) or 0 (stored).
local id = ARGV[1]
local key = k_job(id)
local f = redis.call('HMGET', key, 'state', 'queue', 'priority')
if not f[1] then return -1 end
redis.call('RPUSH', k_events(id), ARGV[3])
redis.call('HSET', key, 'durable', '1') -- its finish expires events:<id> too
if f[1] ~= 'waiting' or redis.call('HGET', k_steps(id), 'waiting') ~= ARGV[2] then return 0 end
local ts = fmt(now())
redis.call('HSET', key, 'state', 'queued', 'run_at', ts)
redis.call('HDEL', k_steps(id), 'waiting')
redis.call('ZREM', KEYS[4], id)
redis.call('ZADD', k_ready(f[2]), ready_score(f[3], ts), id)
count('waiting', f[2], -1)
count('queued', f[2], 1)
flush_counts(KEYS[2])
wake(KEYS[3], 1)
return 1
