-- _limits.lua: concurrency and rate limits, applied by job_claim.lua (limit_admit).
-- Prepended after _lib.lua and _flow.lua (uses K_LIMITS, K_SCHEDULED); local functions.
--
-- Derived keys (same hash tag as KEYS[1]):
--   limits               hash limit key -> "concurrency|rate_count|rate_period" ('' = none),
--                        written by job_insert_flow (see _flow.lua)
--   limit:run:<key>      set of job ids claimed under the key; checked lazily (members no
--                        longer running under that key are dropped when counted), so a
--                        finish, release or rescue needs no bookkeeping of its own, and a
--                        holder whose worker died frees its slot when it is rescued.
--                        Counted only when its size reaches the limit (a stale member only
--                        over-counts, so fewer members than the limit is room enough), and
--                        then once per claim call per key: the count is carried from job to
--                        job of the call (nothing else runs during the script). Pruning on
--                        every admission cost each job a scan of all the key's holders
--                        (BENCHMARKS.md, "Flow control's cost").
--   limit:hits:<key>     zset of recent starts (score = start time), for the rate window
--   limit_overrides      hash limit key -> "concurrency|rate_count|rate_period": an
--                        operator's values (conveyor limits set), each part over the
--                        code's ('' = the code's); read at every claim
--
-- Like SQLite (claim_limits.py): a job over its limit goes back to scheduled a moment later
-- (0.2-0.4 s for concurrency, when the window frees for a rate) before it is claimed, so
-- no attempt, token or error is spent. A job without a limit key pays nothing; a store
-- where no limit was ever declared, one EXISTS per claim call.

-- When a job over its limit comes back: conveyor/rules.py limit_deferral, the same
-- arithmetic with RULE_LIMIT_RECHECK and RULE_RATE_JITTER; run here, atomically in the
-- claim (a job must never be seen running over its limit).
local limits_on = nil -- EXISTS limits, asked once per script call
-- Per limit key, for this script call: its settings {concurrency, rate_count, period}
-- (read once), and its holders as last known {count, exact}: exact once pruned.
local limit_conf = {}
local limit_held = {}

local function k_limit_run(key) return BASE .. 'limit:run:' .. key end
local function k_limit_hits(key) return BASE .. 'limit:hits:' .. key end

local function limit_defer(id, key, queue, run_at)
  redis.call('HSET', key, 'state', 'scheduled', 'run_at', fmt(run_at))
  redis.call('ZADD', K_SCHEDULED, fmt(run_at), id)
  count('queued', queue, -1)
  count('scheduled', queue, 1)
end

-- May job `id` (hash `key`, popped from ready:<queue>) start now? If not, it is deferred
-- here and false returned; if so, its start is counted against its limit key.
local function limit_settings(lkey)
  local conf = redis.call('HGET', K_LIMITS, lkey)
  if not conf then return false end
  local c, n, p = string.match(conf, '^([^|]*)|([^|]*)|([^|]*)$')
  local concurrency, rate_count, period = tonumber(c), tonumber(n), tonumber(p)
  local over = redis.call('HGET', BASE .. 'limit_overrides', lkey)
  if over then
    local oc, on, op = string.match(over, '^([^|]*)|([^|]*)|([^|]*)$')
    concurrency = tonumber(oc) or concurrency
    rate_count, period = tonumber(on) or rate_count, tonumber(op) or period
  end
  return {concurrency, rate_count, period}
end

-- How many of the key's holders run (members no longer running under it dropped).
local function limit_prune(run, lkey)
  local held, stale = 0, {}
  for _, other in ipairs(redis.call('SMEMBERS', run)) do
    local s = redis.call('HMGET', k_job(other), 'state', 'limit_key')
    if s[1] == 'running' and s[2] == lkey then held = held + 1
    else stale[#stale + 1] = other end
  end
  for i = 1, #stale, 1000 do
    redis.call('SREM', run, unpack(stale, i, math.min(i + 999, #stale)))
  end
  return held
end

-- May job `id` (hash `key`, popped from ready:<queue>, its limit_key field `lkey`, read
-- with its other fields) start now? If not, it is deferred here and false returned; if
-- so, its start is counted against its limit key.
local function limit_admit(id, key, queue, t, lkey)
  if not lkey then return true end
  if limits_on == nil then limits_on = redis.call('EXISTS', K_LIMITS) == 1 end
  if not limits_on then return true end
  local conf = limit_conf[lkey]
  if conf == nil then
    conf = limit_settings(lkey)
    limit_conf[lkey] = conf
  end
  if not conf then return true end
  local concurrency, rate_count, period = conf[1], conf[2], conf[3]
  local run = k_limit_run(lkey)
  local held = limit_held[lkey]
  if concurrency then
    if held == nil then held = {redis.call('SCARD', run), false} end
    if held[1] >= concurrency and not held[2] then held = {limit_prune(run, lkey), true} end
    limit_held[lkey] = held
    if held[1] >= concurrency then
      limit_defer(id, key, queue, t + RULE_LIMIT_RECHECK * (1 + math.random()))
      return false
    end
  end
  local hits = k_limit_hits(lkey)
  if rate_count and period then
    redis.call('ZREMRANGEBYSCORE', hits, '-inf', fmt(t - period))
    local n_hits = redis.call('ZCARD', hits)
    if n_hits >= rate_count then
      -- the earliest moment a start leaves the window
      local first = redis.call('ZRANGE', hits, n_hits - rate_count, n_hits - rate_count,
        'WITHSCORES')
      limit_defer(id, key, queue, tonumber(first[2]) + period + math.random() * RULE_RATE_JITTER)
      return false
    end
    redis.call('ZADD', hits, fmt(t), fmt(t) .. ':' .. id)
    redis.call('PEXPIRE', hits, math.ceil(period * 1000) + 1000)
  end
  if concurrency then
    held[1] = held[1] + redis.call('SADD', run, id) -- 0: a stale entry of its own
  end
  return true
end
