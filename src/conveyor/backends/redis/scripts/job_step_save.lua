-- job_step_save: one durable step's checkpoint, fenced by the claim token.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] job id   ARGV[2] token   ARGV[3] position   ARGV[4] step JSON   ARGV[5] '1': replace
-- Derived: job:<id>, steps:<id>.
-- Written only while the job is running under the token, and at a position already
-- saved only with replace (a failed run's record). Returns 1 when written, else 0.
local f = redis.call('HMGET', k_job(ARGV[1]), 'state', 'token')
if f[1] ~= 'running' or f[2] ~= ARGV[2] then return 0 end
local key = k_steps(ARGV[1])
if ARGV[5] ~= '1' and redis.call('HEXISTS', key, ARGV[3]) == 1 then return 0 end
redis.call('HSET', key, ARGV[3], ARGV[4])
-- the job's first step, or a published value (a negative position): its finish must
-- also expire steps:<id> (finished() in _lib)
if tonumber(ARGV[3]) <= 0 then redis.call('HSET', k_job(ARGV[1]), 'durable', '1') end
-- the first step: the job has started, expires= (how long it may wait to start) no
-- longer applies to it, parked, sleeping or rescued
if ARGV[3] == '0' then
  redis.call('HDEL', k_job(ARGV[1]), 'expires_at')
  redis.call('ZREM', BASE .. 'expiring', ARGV[1])
end
return 1
