-- job_release: give running jobs back to ready without counting the attempt (shutdown).
-- KEYS[1] base "{prefix}:"   KEYS[2] counts hash   KEYS[3] wake list
-- ARGV[1] worker id (recorded on the attempt)   ARGV[2..]: pairs of id, token
-- Derived: job:<id>, attempts:<id>, ready:<queue>, inflight:<worker>.
-- Fenced: only jobs still running under that token move. Returns the refused ids.
local ts = fmt(now())
local refused = {}
local released = 0
for b = 2, #ARGV, 2 do
  local id, token = ARGV[b], ARGV[b + 1]
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'token', 'queue', 'worker_id', 'attempt',
    'started_at', 'priority', 'run_at')
  if f[1] ~= 'running' or f[2] ~= token then
    refused[#refused + 1] = id
  else
    local queue = f[3]
    redis.call('HSET', key, 'state', 'queued', 'attempt', tostring(math.max(counter(f[5]) - 1, 0)))
    redis.call('HDEL', key, 'worker_id', 'lease_until')
    if f[4] then redis.call('SREM', k_inflight(f[4]), id) end
    redis.call('ZADD', k_ready(queue), ready_score(f[7], f[8]), id)
    count('running', queue, -1)
    count('queued', queue, 1)
    add_attempt(id, f[5], token, ARGV[1], f[6], ts, RULE_RELEASED, nil)
    released = released + 1
  end
end
flush_counts(KEYS[2])
wake(KEYS[3], released)
return refused
