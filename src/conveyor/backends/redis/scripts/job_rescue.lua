-- job_rescue: requeue (or bury) the running jobs of workers that are gone.
-- KEYS[1] base "{prefix}:"   KEYS[2] running zset   KEYS[3] workers zset (heartbeats)
-- KEYS[4] counts hash        KEYS[5] wake list      KEYS[6] expiry zset
-- ARGV[1] staleness in seconds: stale_before = server now - ARGV[1] (the caller's
--   stale_before turned into an age, so clock skew between hosts does not matter)
-- ARGV[2] max_rescues   ARGV[3] result TTL seconds   ARGV[4] worker-lost error JSON
-- ARGV[5..] worker ids the caller proved dead
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>, inflight:<worker>,
--   worker:<worker>.
-- Liveness is re-checked here, in the same atomic step that moves the job, so a live
-- claim is never requeued. A running job is rescued when its worker is proved dead,
-- has no heartbeat, a heartbeat older than stale_before, or its lease expired before
-- stale_before (same rule as SQLite's job_rescue_candidates.sql). Rescued once too often
-- (rescues + 1 > max_rescues) or out of attempts: dead, reason "worker lost".
-- Returns flattened triples {id, worker_id, 'queued' | 'dead'}.
local t = now()
local ts = fmt(t)
local stale = t - tonumber(ARGV[1])
local max_rescues = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local lost_error = ARGV[4]
local dead = {}
for i = 5, #ARGV do dead[ARGV[i]] = true end

local out = {}
local requeued = 0
local running = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #running, 2 do
  local id, lease_until = running[i], tonumber(running[i + 1])
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'token', 'attempt', 'max_attempts',
    'rescues', 'worker_id', 'started_at', 'queue', 'priority', 'run_at')
  if f[1] ~= 'running' then
    redis.call('ZREM', KEYS[2], id) -- index debris
  else
    local worker = f[6]
    local beat = worker and redis.call('ZSCORE', KEYS[3], worker)
    if not worker or not beat or tonumber(beat) < stale or lease_until < stale
        or dead[worker] then
      local queue = f[8]
      local rescues = tonumber(f[5])
      local lost = rescues + 1 > max_rescues or tonumber(f[3]) >= tonumber(f[4])
      redis.call('ZREM', KEYS[2], id)
      if worker then redis.call('SREM', k_inflight(worker), id) end
      redis.call('HDEL', key, 'worker_id', 'lease_until')
      count('running', queue, -1)
      add_attempt(id, f[3], f[2], worker, f[7], ts, 'lost', lost_error)
      if lost then
        redis.call('HSET', key, 'state', 'dead', 'reason', 'worker lost', 'error', lost_error,
          'finished_at', ts)
        count('dead', queue, 1)
        finished(KEYS[6], id, 'dead', queue, ttl, t)
      else
        redis.call('HSET', key, 'state', 'queued', 'rescues', tostring(rescues + 1))
        redis.call('ZADD', k_ready(queue), ready_score(f[9], f[10]), id)
        count('queued', queue, 1)
        requeued = requeued + 1
      end
      out[#out + 1] = id
      out[#out + 1] = worker
      out[#out + 1] = lost and 'dead' or 'queued'
    end
  end
end

-- Forget workers that are gone and hold nothing any more (SQLite deletes their rows).
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. fmt(stale))
for i = 5, #ARGV do gone[#gone + 1] = ARGV[i] end
for _, worker in ipairs(gone) do
  if redis.call('SCARD', k_inflight(worker)) == 0 then
    redis.call('DEL', k_worker(worker))
    redis.call('ZREM', KEYS[3], worker)
  end
end
flush_counts(KEYS[4])
wake(KEYS[5], requeued)
return out
