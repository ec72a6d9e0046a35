-- job_rescue_apply: move found jobs of gone workers where the caller decided
-- (conveyor/rules.py rescue_state: queued again, or dead "worker lost").
-- KEYS[1] base "{prefix}:"   KEYS[2] holders set   KEYS[3] workers zset (heartbeats)
-- KEYS[4] counts hash   KEYS[5] wake list   KEYS[6] expiry zset
-- ARGV[1] staleness in seconds (as job_rescue)   ARGV[2] result TTL seconds
-- ARGV[3] worker-lost error JSON
-- ARGV[4] JSON [[id, worker_id, token, state, give_back, reason, charge], ...]: give_back
--   1 when the job was held with others by its dead worker (poison isolation: its
--   attempt is given back); reason for 'dead' (null: worker lost; else the odd field
--   found); charge the rescues counted (0: a durable job that saved a step meanwhile)
-- ARGV[5..] worker ids the caller proved dead
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>, inflight:<worker>,
--   worker:<worker>; workflow keys of _flow.lua (dependants of a buried job settle here).
-- Fenced: a job moves only while it is still running under that worker and token and
-- the worker is still gone (re-checked here, atomically with the move).
-- Returns flattened triples {id, worker_id, 'queued' | 'dead'} of the jobs moved.
local t = now()
local ts = fmt(t)
local stale = t - tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local lost_error = ARGV[3]
local dead = rescue_dead_set(5)
local out = {}
local requeued = 0
local lost_flow = {} -- workflow jobs buried here: their dependants are settled below

for _, d in ipairs(cjson.decode(ARGV[4])) do
  local id, worker, token, target, give_back, reason = d[1], d[2], d[3], d[4], d[5], d[6]
  if type(reason) ~= 'string' then reason = RULE_WORKER_LOST_REASON end
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'token', 'attempt', 'max_attempts', 'rescues',
    'started_at', 'queue', 'priority', 'run_at', 'worker_id', 'watched', 'flow', 'state',
    'lease_until')
  local held = f[12] == 'running' and f[9] == worker and f[1] == token
  if held and (rescue_worker_gone(KEYS[3], worker, dead, stale)
      or rescue_lease_expired(f[13], stale)) then
    local queue = f[6]
    redis.call('SREM', k_inflight(worker), id)
    redis.call('HDEL', key, 'worker_id', 'lease_until')
    count('running', queue, -1)
    add_attempt(id, f[2], f[1], worker, f[5], ts, RULE_LOST, lost_error)
    if target == 'dead' then
      redis.call('HSET', key, 'state', 'dead', 'reason', reason,
        'error', lost_error, 'finished_at', ts)
      count('dead', queue, 1)
      finished(KEYS[6], id, 'dead', queue, ttl, t, f[10])
      if f[11] then
        lost_flow[#lost_flow + 1] = {id, RULE_LOST_PARENT_FAILED}
        flow_expire(id, ttl)
      end
    else
      local charge = d[7]
      if type(charge) ~= 'number' then charge = 1 end
      redis.call('HSET', key, 'state', 'queued', 'rescues', tostring(counter(f[4]) + charge),
        'attempt', tostring(math.max(counter(f[2]) - (give_back or 0), 0)))
      redis.call('ZADD', k_ready(queue), ready_score(f[7], f[8]), id)
      count('queued', queue, 1)
      requeued = requeued + 1
    end
    out[#out + 1] = id
    out[#out + 1] = worker
    out[#out + 1] = target
    if redis.call('SCARD', k_inflight(worker)) == 0 then redis.call('SREM', KEYS[2], worker) end
  end
end
rescue_forget(KEYS[3], 5, stale)
settle({}, lost_flow, t, ttl)
flush_counts(KEYS[4])
wake(KEYS[5], requeued + flow_woken)
return out
