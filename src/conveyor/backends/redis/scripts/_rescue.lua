-- _rescue.lua: who counts as gone, shared by job_rescue (find) and job_rescue_apply
-- (move), so the liveness rule is written once and re-checked in the script that moves
-- the job (a live claim is never requeued). Same rule as SQLite's
-- job_rescue_candidates.sql: proved dead by the caller, no heartbeat, a heartbeat older
-- than stale_before, or a lease that expired before stale_before.
-- Prepended after _lib.lua; defines locals only (a script gets those it names).

-- The caller's proved-dead worker ids, ARGV[first..].
local function rescue_dead_set(first)
  local dead = {}
  for i = first, #ARGV do dead[ARGV[i]] = true end
  return dead
end

local function rescue_worker_gone(workers_key, worker, dead, stale)
  if dead[worker] then return true end
  local beat = redis.call('ZSCORE', workers_key, worker)
  return not beat or tonumber(beat) < stale
end

-- A lease that expired before stale (an odd lease_until never expires, as SQLite's
-- comparison of text or NULL with a number is never true).
local function rescue_lease_expired(lease_until, stale)
  local n = number_or(lease_until, nil)
  return n ~= nil and n < stale
end

-- Forget workers that are gone and hold nothing any more (SQLite deletes their rows).
local function rescue_forget(workers_key, dead_first, stale)
  local forget = redis.call('ZRANGEBYSCORE', workers_key, '-inf', '(' .. fmt(stale))
  for i = dead_first, #ARGV do forget[#forget + 1] = ARGV[i] end
  for _, worker in ipairs(forget) do
    if redis.call('SCARD', k_inflight(worker)) == 0 then
      redis.call('DEL', k_worker(worker))
      redis.call('ZREM', workers_key, worker)
    end
  end
end
