-- job_watch: mark a job as waited on, so finishing it notifies done:<id>.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] job id
-- Derived: job:<id>.
-- Returns the job's state, or false when there is no such job (nothing is created).
local key = k_job(ARGV[1])
local state = redis.call('HGET', key, 'state')
if state then redis.call('HSET', key, 'watched', '1') end
return state
