-- job_delete: delete jobs in any state, with their history and index entries.
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] scheduled zset
-- KEYS[4] expiry zset        KEYS[5] counts hash
-- ARGV: job ids
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>, inflight:<worker>.
-- A deleted running job's worker will have its finish refused (fencing). Waiters are
-- woken so they see the job is gone. Returns the number of jobs deleted.
local deleted = 0
for _, id in ipairs(ARGV) do
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'worker_id', 'watched')
  local state, queue = f[1], f[2]
  if state then
    if state == 'queued' then
      redis.call('ZREM', k_ready(queue), id)
    elseif state == 'scheduled' then
      redis.call('ZREM', KEYS[3], id)
    elseif state == 'running' then
      if f[3] then redis.call('SREM', k_inflight(f[3]), id) end
    else
      redis.call('ZREM', KEYS[4], expiry_member(state, queue, id))
    end
    redis.call('DEL', key, k_attempts(id), k_logs(id))
    redis.call('ZREM', KEYS[2], id)
    count(state, queue, -1)
    notify_done(id, f[4])
    deleted = deleted + 1
  end
end
flush_counts(KEYS[5])
return deleted
