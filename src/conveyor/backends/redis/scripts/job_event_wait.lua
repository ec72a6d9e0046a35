-- job_event_wait: consume an event for a wait_for step, time it out, or park the job.
-- KEYS[1] base "{prefix}:"   KEYS[2] counts hash   KEYS[3] waiting zset
-- ARGV[1] job id   ARGV[2] token   ARGV[3] position   ARGV[4] event name
-- ARGV[5] deadline (epoch seconds)   ARGV[6] the step JSON as received (payload last)
-- ARGV[7] the step JSON as timed out   ARGV[8] the step JSON as waiting
-- Derived: job:<id>, steps:<id>, events:<id>, inflight:<worker>.
-- Fenced by the token. The oldest event of that name is consumed (removed: Redis keeps
-- no consumed events) and the step saved with its payload in place of the client's
-- placeholder "@PAYLOAD@" in ARGV[6]. Returns {status, payload or false}.
local id, token = ARGV[1], ARGV[2]
local key = k_job(id)
local f = redis.call('HMGET', key, 'state', 'token', 'queue', 'worker_id', 'attempt')
if f[1] ~= 'running' or f[2] ~= token then return {'refused', false} end
local steps, events = k_steps(id), k_events(id)
if ARGV[3] == '0' then redis.call('HSET', key, 'durable', '1') end -- as job_step_save
for _, e in ipairs(redis.call('LRANGE', events, 0, -1)) do
  local decoded = cjson.decode(e)
  if decoded[1] == ARGV[4] then
    redis.call('LREM', events, 1, e)
    local payload = decoded[2]
    redis.call('HSET', steps, ARGV[3],
      (string.gsub(ARGV[6], '"@PAYLOAD@"', function() return cjson.encode(payload) end)))
    return {'received', payload}
  end
end
local t = now()
if t >= tonumber(ARGV[5]) then
  redis.call('HSET', steps, ARGV[3], ARGV[7])
  return {'timed_out', false}
end
redis.call('HSET', steps, ARGV[3], ARGV[8], 'waiting', ARGV[4])
redis.call('HSET', key, 'state', 'waiting', 'run_at', ARGV[5],
  'attempt', tostring(math.max(counter(f[5]) - 1, 0)))
redis.call('HDEL', key, 'worker_id', 'lease_until', 'expires_at') -- started: no expiry
redis.call('ZREM', BASE .. 'expiring', id)
if f[4] then redis.call('SREM', k_inflight(f[4]), id) end
redis.call('ZADD', KEYS[3], ARGV[5], id)
count('running', f[3], -1)
count('waiting', f[3], 1)
flush_counts(KEYS[2])
return {'parked', false}
