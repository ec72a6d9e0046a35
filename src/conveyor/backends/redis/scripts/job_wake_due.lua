-- job_wake_due: jobs parked by wait_for whose deadline passed -> queued (they replay
-- and time out at the wait).
-- KEYS[1] base "{prefix}:"   KEYS[2] counts hash   KEYS[3] wake list   KEYS[4] waiting zset
-- ARGV[1] the most jobs to move
-- Derived: job:<id>, steps:<id>, ready:<queue>.
-- An entry whose job no longer waits (woken by an event, cancelled, deleted) just goes.
-- Returns how many were queued.
local t = now()
local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', fmt(t), 'LIMIT', 0, tonumber(ARGV[1]))
local ts = fmt(t)
local woken = 0
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[4], id)
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'priority')
  if f[1] == 'waiting' and redis.call('HEXISTS', k_steps(id), 'waiting') == 1 then
    redis.call('HSET', key, 'state', 'queued', 'run_at', ts)
    redis.call('HDEL', k_steps(id), 'waiting')
    redis.call('ZADD', k_ready(f[2]), ready_score(f[3], ts), id)
    count('waiting', f[2], -1)
    count('queued', f[2], 1)
    woken = woken + 1
  end
end
flush_counts(KEYS[2])
wake(KEYS[3], woken)
return woken
