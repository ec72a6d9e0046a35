-- job_claim: promote due scheduled jobs, then claim ready jobs for one worker.
-- KEYS[1] base "{prefix}:"   KEYS[2] scheduled zset   KEYS[3] holders set
-- KEYS[4] inflight:<worker>  KEYS[5] counts hash      KEYS[6] wake list
-- KEYS[7..] ready:<queue> for each queue, in the caller's order
-- ARGV[1] worker id   ARGV[2] total   ARGV[3] promote limit   ARGV[4..] limit per queue
-- Derived: job:<id>, ready:<queue> (of promoted jobs).
-- Ring mode (a worker on many queues, conveyor.backends.queue_ring): KEYS[1..6] only,
-- ARGV[4] = '*ring', ARGV[5..] one chunk of the ring's queue names, in its order: the
-- first job of each non-empty, unpaused one of them, up to total (their ready keys are
-- derived from the names, under the same hash-tagged prefix, as job keys are), and no
-- top-up (the client tops up from the queues that gave a job, with a plain call).
-- Passing the names of a chunk instead of every queue's key keeps a claim's cost to
-- the chunk, not to all the worker's queues.
-- First pass: up to each queue's limit; second pass: top up to total from the same
-- queues in the same order (as SQLite). Token and attempt count here; the lease is
-- timed by the server clock. Returns {promoted, jobs} where jobs is a JSON array (parsed
-- in C by the client, much cheaper than a nested reply) of arrays of strings
-- [id, task, queue, payload, attempt, max_attempts, token, timeout (false = NULL),
--  lease, run_at, claimed_at, rescues, priority, headers (false = none),
--  expires_at (false = never: the worker ends a job past it 'expired', unrun)].
local t = now()
local ts = fmt(t)
local worker = ARGV[1]
local remaining = tonumber(ARGV[2])
local promoted = promote_due(KEYS[2], t, tonumber(ARGV[3]))
local out = {}
local claimed_ids = {} -- added to inflight:<worker> in one SADD at the end
local empty = {}
local nq = #KEYS - 6

local function take_from(ready_key, want)
  local popped = redis.call('ZPOPMIN', ready_key, want)
  for j = 1, #popped, 2 do
    local id = popped[j]
    local key = k_job(id)
    local f = redis.call('HMGET', key, 'state', 'task', 'queue', 'payload', 'attempt',
      'max_attempts', 'token', 'timeout', 'lease', 'run_at', 'rescues', 'priority', 'headers',
      'expires_at', 'limit_key')
    -- A ready entry whose hash is gone or moved on is index debris: drop it. A job over
    -- its limit is deferred by limit_admit (_limits.lua), no attempt counted. One with
    -- no queue field cannot be counted or moved: skipped, as debris.
    if f[1] == 'queued' and f[3] and limit_admit(id, key, f[3], t, f[15]) then
      -- An odd count (_lib.lua's counter) starts from 0 rather than fail the script or
      -- fence the finish with a token it cannot match (the client refuses the job).
      local attempt = tostring(counter(f[5]) + 1)
      local token = tostring(counter(f[7]) + 1)
      local lease_until = fmt(t + number_or(f[9], 0))
      redis.call('HSET', key, 'state', 'running', 'worker_id', worker, 'token', token,
        'attempt', attempt, 'started_at', ts, 'lease_until', lease_until)
      claimed_ids[#claimed_ids + 1] = id
      count('queued', f[3], -1)
      count('running', f[3], 1)
      out[#out + 1] = {id, f[2], f[3], f[4], attempt, f[6], token, f[8], f[9], f[10], ts,
        f[11], f[12], f[13], f[14]}
      remaining = remaining - 1
    end
  end
  return #popped < want * 2
end

local function take(i, want)
  if take_from(KEYS[6 + i], want) then empty[i] = true end
end

-- Paused queues (queue_pause) are skipped: marked empty, so neither pass takes from
-- them. Checked here, inside the claim, so every worker obeys at its next claim.
local paused = BASE .. 'paused'
if ARGV[4] == '*ring' then
  local any_paused = redis.call('EXISTS', paused) == 1
  for a = 5, #ARGV do
    if remaining <= 0 then break end
    local queue = ARGV[a]
    if not (any_paused and redis.call('SISMEMBER', paused, queue) == 1) then
      take_from(k_ready(queue), 1)
    end
  end
end
if redis.call('EXISTS', paused) == 1 then
  for i = 1, nq do
    local queue = string.sub(KEYS[6 + i], #BASE + 7) -- strip '<base>ready:'
    if redis.call('SISMEMBER', paused, queue) == 1 then empty[i] = true end
  end
end

for i = 1, nq do
  local want = math.min(tonumber(ARGV[3 + i]), remaining)
  if want > 0 and not empty[i] then take(i, want) end
end
for i = 1, nq do
  if remaining <= 0 then break end
  if not empty[i] then take(i, remaining) end
end
flush_counts(KEYS[5])
-- The rescuer finds running jobs through the workers that hold some.
if #out > 0 then
  for i = 1, #claimed_ids, 1000 do
    redis.call('SADD', KEYS[4], unpack(claimed_ids, i, math.min(i + 999, #claimed_ids)))
  end
  redis.call('SADD', KEYS[3], worker)
end
-- Promoted jobs this claim could not take are for other workers: wake them.
wake(KEYS[6], promoted - #out)
if #out == 0 then return {promoted, '[]'} end
return {promoted, cjson.encode(out)}
