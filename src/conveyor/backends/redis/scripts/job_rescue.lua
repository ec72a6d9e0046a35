-- job_rescue: find the running jobs of workers that are gone (nothing is moved here).
-- KEYS[1] base "{prefix}:"   KEYS[2] holders set (workers with in-flight jobs)
-- KEYS[3] workers zset (heartbeats)
-- ARGV[1] staleness in seconds: stale_before = server now - ARGV[1] (the caller's
--   stale_before turned into an age, so clock skew between hosts does not matter)
-- ARGV[2..] worker ids the caller proved dead
-- Derived: job:<id>, inflight:<worker>, worker:<worker>.
-- Where each found job goes is decided by the caller (conveyor/rules.py rescue_state)
-- and applied by job_rescue_apply, which re-checks liveness and the claim token.
-- Cleans debris (in-flight entries of jobs no longer running there, empty holders) and
-- forgets gone workers that hold nothing.
-- Returns flattened {id, worker_id, token, attempt, max_attempts, rescues} per job.
local t = now()
local stale = t - tonumber(ARGV[1])
local dead = rescue_dead_set(2)
local out = {}
for _, worker in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local inflight = k_inflight(worker)
  local gone = rescue_worker_gone(KEYS[3], worker, dead, stale)
  for _, id in ipairs(redis.call('SMEMBERS', inflight)) do
    local s = redis.call('HMGET', k_job(id), 'state', 'worker_id', 'lease_until', 'token',
      'attempt', 'max_attempts', 'rescues')
    if s[1] ~= 'running' or s[2] ~= worker then
      redis.call('SREM', inflight, id) -- debris (e.g. the job was deleted)
    elseif gone or rescue_lease_expired(s[3], stale) then
      for _, v in ipairs({id, worker, s[4], s[5], s[6], s[7]}) do out[#out + 1] = v end
    end
  end
  if redis.call('SCARD', inflight) == 0 then redis.call('SREM', KEYS[2], worker) end
end
rescue_forget(KEYS[3], 2, stale)
return out
