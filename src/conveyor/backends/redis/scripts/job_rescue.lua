-- job_rescue: requeue (or bury) the running jobs of workers that are gone.
-- KEYS[1] base "{prefix}:"   KEYS[2] holders set (workers with in-flight jobs)
-- KEYS[3] workers zset (heartbeats)   KEYS[4] counts hash   KEYS[5] wake list
-- KEYS[6] expiry zset
-- ARGV[1] staleness in seconds: stale_before = server now - ARGV[1] (the caller's
--   stale_before turned into an age, so clock skew between hosts does not matter)
-- ARGV[2] max_rescues   ARGV[3] result TTL seconds   ARGV[4] worker-lost error JSON
-- ARGV[5..] worker ids the caller proved dead
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>, inflight:<worker>,
--   worker:<worker>.
-- Liveness is re-checked here, in the same atomic step that moves the job, so a live
-- claim is never requeued. A running job is rescued when its worker is proved dead,
-- has no heartbeat, a heartbeat older than stale_before, or its lease expired before
-- stale_before (same rule as SQLite's job_rescue_candidates.sql). Where it goes then is
-- rule_rescue_dead (conveyor/rules.py rescue_state): queued, or dead "worker lost".
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
local lost_flow = {} -- workflow jobs buried here: their dependants are settled below

local function rescue(id, key, worker, f)
  local queue = f[6]
  local rescues = tonumber(f[4])
  local lost = rule_rescue_dead(tonumber(f[2]), tonumber(f[3]), rescues, max_rescues)
  redis.call('SREM', k_inflight(worker), id)
  redis.call('HDEL', key, 'worker_id', 'lease_until')
  count('running', queue, -1)
  add_attempt(id, f[2], f[1], worker, f[5], ts, RULE_LOST, lost_error)
  if lost then
    redis.call('HSET', key, 'state', 'dead', 'reason', RULE_WORKER_LOST_REASON, 'error', lost_error,
      'finished_at', ts)
    count('dead', queue, 1)
    finished(KEYS[6], id, 'dead', queue, ttl, t, f[10])
    if f[11] then
      lost_flow[#lost_flow + 1] = {id, RULE_LOST_PARENT_FAILED}
      flow_expire(id, ttl)
    end
  else
    redis.call('HSET', key, 'state', 'queued', 'rescues', tostring(rescues + 1))
    redis.call('ZADD', k_ready(queue), ready_score(f[7], f[8]), id)
    count('queued', queue, 1)
    requeued = requeued + 1
  end
  out[#out + 1] = id
  out[#out + 1] = worker
  out[#out + 1] = lost and 'dead' or 'queued'
end

for _, worker in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local inflight = k_inflight(worker)
  local beat = redis.call('ZSCORE', KEYS[3], worker)
  local gone = dead[worker] or not beat or tonumber(beat) < stale
  for _, id in ipairs(redis.call('SMEMBERS', inflight)) do
    local key = k_job(id)
    local s = redis.call('HMGET', key, 'state', 'worker_id', 'lease_until')
    if s[1] ~= 'running' or s[2] ~= worker then
      redis.call('SREM', inflight, id) -- debris (e.g. the job was deleted)
    elseif gone or tonumber(s[3]) < stale then
      local f = redis.call('HMGET', key, 'token', 'attempt', 'max_attempts', 'rescues',
        'started_at', 'queue', 'priority', 'run_at', 'worker_id', 'watched', 'flow')
      rescue(id, key, worker, f)
    end
  end
  if redis.call('SCARD', inflight) == 0 then redis.call('SREM', KEYS[2], worker) end
end

-- Forget workers that are gone and hold nothing any more (SQLite deletes their rows).
local forget = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. fmt(stale))
for i = 5, #ARGV do forget[#forget + 1] = ARGV[i] end
for _, worker in ipairs(forget) do
  if redis.call('SCARD', k_inflight(worker)) == 0 then
    redis.call('DEL', k_worker(worker))
    redis.call('ZREM', KEYS[3], worker)
  end
end
settle({}, lost_flow, t, ttl)
flush_counts(KEYS[4])
wake(KEYS[5], requeued + flow_woken)
return out
