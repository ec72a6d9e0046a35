-- job_finish: end many attempts in one call, each fenced by its claim token.
-- KEYS[1] base "{prefix}:"   KEYS[2] scheduled zset   KEYS[3] expiry zset
-- KEYS[4] counts hash        KEYS[5] wake list        KEYS[6] jobs (id index zset)
-- ARGV[1] result TTL in seconds (finished jobs and their attempts expire after it)
-- ARGV[2]: JSON array, one array per job: [id, token (int), kind (s succeeded,
--   r retry, d dead, c cancelled, x drop, z snooze), worker_id, attempt (int), result, error,
--   reason, run_at, started_at, finished_at]; times are decimal strings; null = NULL
-- Derived: job:<id>, attempts:<id>, done:<id>, inflight:<worker>.
-- A job is changed only if it is running under that token; the others are refused
-- (a stale worker) and returned. The attempt record and the state change are written
-- by this one script, so a crash can never split "record the retry" from "ack".
-- Snooze (z): back to scheduled at run_at with the attempt given back, recorded as a
-- "snoozed" attempt; a cancel requested meanwhile wins (the job ends cancelled).
-- Workflows: a job with field flow = '1' that ended moves its dependants (settle in
-- _flow.lua) in this script: ready with results piped, or cancelled transitively.
local t = now()
local ts = fmt(t)
local ttl = tonumber(ARGV[1])
local refused = {}
local retried = 0
-- Target states, attempt outcomes and what dependants see: RULE_FINISH (conveyor/rules.py).
local ended_ok, ended_bad = {}, {} -- workflow jobs that ended (settle's arguments)
local leaving = {} -- worker id -> ids that leave inflight:<worker> (one SREM each, at the end)
local function arg(v) if v == cjson.null then return false end return v end
for _, p in ipairs(cjson.decode(ARGV[2])) do
  local id, token, kind = p[1], string.format('%d', p[2]), p[3]
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'token', 'queue', 'worker_id', 'watched',
    'cancel_requested', 'flow', 'durable')
  if f[1] ~= 'running' or f[2] ~= token then
    refused[#refused + 1] = id
  else
    local queue = f[3]
    if f[4] then
      local held = leaving[f[4]]
      if not held then held = {}; leaving[f[4]] = held end
      held[#held + 1] = id
    end
    count('running', queue, -1)
    local err, reason = arg(p[7]), arg(p[8])
    if kind == 'z' and f[6] == '1' then
      -- snoozing a job whose cancel was requested: it ends cancelled with that reason
      kind = 'c'
      reason = redis.call('HGET', key, 'reason') or 'cancelled while running'
    end
    local fin = arg(p[11]) or ts
    local rule = RULE_FINISH[kind]
    if not rule.state then
      -- drop: the row and its history go, as SQLite's DELETE
      redis.call('DEL', key, k_attempts(id), k_logs(id), k_steps(id), k_events(id))
      redis.call('ZREM', KEYS[6], id)
      notify_done(id, f[5])
    else
      add_attempt(id, string.format('%d', p[5]), token, arg(p[4]), arg(p[10]), fin,
        rule.outcome, err)
      if not rule.ends and rule.give_back then
        local run_at = arg(p[9]) or ts
        -- the attempt given back from the claim's count (p[5]), not HINCRBY: a hash
        -- edited by hand since may hold a non-integer there, and HINCRBY would fail
        -- after the writes above
        redis.call('HSET', key, 'state', rule.state, 'run_at', run_at,
          'attempt', string.format('%d', math.max(p[5] - 1, 0)))
        redis.call('HDEL', key, 'worker_id', 'lease_until')
        redis.call('ZADD', KEYS[2], run_at, id)
        count(rule.state, queue, 1)
        retried = retried + 1
      elseif not rule.ends then
        local run_at = arg(p[9]) or ts
        hset_nullable(key, {'state', rule.state, 'run_at', run_at, 'error', err,
          'reason', reason, 'worker_id', false, 'lease_until', false})
        redis.call('ZADD', KEYS[2], run_at, id)
        count(rule.state, queue, 1)
        retried = retried + 1
      elseif kind == 's' then
        -- the hot path, written out: no temporary tables
        local result = arg(p[6])
        if result then
          redis.call('HSET', key, 'state', rule.state, 'finished_at', fin, 'result', result)
          redis.call('HDEL', key, 'worker_id', 'lease_until')
        else
          redis.call('HSET', key, 'state', rule.state, 'finished_at', fin)
          redis.call('HDEL', key, 'worker_id', 'lease_until', 'result')
        end
      else
        hset_nullable(key, {'state', rule.state, 'error', err, 'reason', reason,
          'finished_at', fin, 'worker_id', false, 'lease_until', false})
      end
      if rule.ends then
        count(rule.state, queue, 1)
        finished(KEYS[3], id, rule.state, queue, ttl, t, f[5], f[8] or false)
      end
    end
    if f[7] and rule.ends then
      -- a workflow job ended: its dependants move below, in this same script
      if not rule.parent_failed then ended_ok[#ended_ok + 1] = id
      else ended_bad[#ended_bad + 1] = {id, rule.parent_failed} end
      flow_expire(id, ttl)
    end
  end
end
for worker, ids in pairs(leaving) do
  for i = 1, #ids, 1000 do
    redis.call('SREM', k_inflight(worker), unpack(ids, i, math.min(i + 999, #ids)))
  end
end
settle(ended_ok, ended_bad, t, ttl)
flush_counts(KEYS[4])
-- A retry may be due at once (no backoff), dependants may be ready: let idle workers look.
wake(KEYS[5], retried + flow_woken)
return refused
