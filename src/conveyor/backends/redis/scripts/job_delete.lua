-- job_delete: delete jobs in any state, with their history and index entries.
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] scheduled zset
-- KEYS[4] expiry zset        KEYS[5] counts hash
-- ARGV[1] result TTL seconds (for dependants cancelled here)   ARGV[2..] job ids
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>, inflight:<worker>;
--   workflow keys of _flow.lua.
-- A deleted running job's worker will have its finish refused (fencing). Waiters are
-- woken so they see the job is gone. Dependants of a job deleted before it succeeded are
-- cancelled ("dependency <id> was deleted"), as it can never release them; the job's
-- workflow edges go with it. Returns the number of jobs deleted.
local t = now()
local ttl = tonumber(ARGV[1])
local deleted = 0
local ids = {unpack(ARGV, 2)}
local gone = {}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', k_job(id), 'state', 'flow')
  if f[2] and f[1] ~= 'succeeded' then gone[#gone + 1] = {id, RULE_WAS_DELETED} end
end
settle({}, gone, t, ttl)
for _, id in ipairs(ids) do
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'worker_id', 'watched', 'flow')
  local state, queue = f[1], f[2]
  if f[5] then
    for _, parent in ipairs(redis.call('LRANGE', k_deps(id), 0, -1)) do
      redis.call('SREM', k_children(parent), id)
    end
    for _, child in ipairs(redis.call('SMEMBERS', k_children(id))) do
      redis.call('LREM', k_deps(child), 0, id)
    end
    redis.call('DEL', k_deps(id), k_children(id))
  end
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
    redis.call('DEL', key, k_attempts(id), k_logs(id), k_steps(id), k_events(id))
    redis.call('ZREM', KEYS[2], id)
    count(state, queue, -1)
    notify_done(id, f[4])
    deleted = deleted + 1
  end
end
flush_counts(KEYS[5])
wake(K_WAKE, flow_woken)
return deleted
