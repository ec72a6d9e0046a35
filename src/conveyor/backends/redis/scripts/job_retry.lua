-- job_retry: manual retry, dead / cancelled / succeeded -> queued (attempts start over).
-- KEYS[1] base "{prefix}:"   KEYS[2] expiry zset   KEYS[3] counts hash
-- KEYS[4] wake list
-- ARGV: job ids
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>.
-- The job and its history lose their result TTL again; its done list is deleted so a
-- later job_wait blocks until the new run finishes. Other states are left alone.
local ts = fmt(now())
local retried = 0
for _, id in ipairs(ARGV) do
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'priority')
  local state, queue = f[1], f[2]
  if RULE_RETRY_BY_HAND[state] then
    redis.call('HSET', key, 'state', 'queued', 'attempt', '0', 'rescues', '0', 'run_at', ts,
      'cancel_requested', '0')
    redis.call('HDEL', key, 'finished_at', 'result', 'reason')
    redis.call('PERSIST', key)
    redis.call('PERSIST', k_attempts(id))
    redis.call('PERSIST', k_logs(id))
    redis.call('DEL', k_done(id))
    redis.call('ZREM', KEYS[2], expiry_member(state, queue, id))
    redis.call('ZADD', k_ready(queue), ready_score(f[3], ts), id)
    count(state, queue, -1)
    count('queued', queue, 1)
    retried = retried + 1
  end
end
flush_counts(KEYS[3])
wake(KEYS[4], retried)
return retried
