-- job_progress: store the progress of running jobs, fenced by their claim token.
-- KEYS[1] base "{prefix}:"
-- ARGV[1]: JSON array, one array per job: [id, token (int), fraction (decimal string
--   or null), message (string or null)]
-- Derived: job:<id>.
-- Only a job still running under that token is written, so a stale worker (its job
-- rescued and claimed again) cannot overwrite the newer attempt's progress.
-- Returns the refused ids.
local refused = {}
for _, p in ipairs(cjson.decode(ARGV[1])) do
  local id, token = p[1], string.format('%d', p[2])
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'token')
  if f[1] ~= 'running' or f[2] ~= token then
    refused[#refused + 1] = id
  else
    local fraction, message = p[3], p[4]
    if fraction == cjson.null then fraction = false end
    if message == cjson.null then message = false end
    hset_nullable(key, {'progress', fraction, 'progress_message', message})
  end
end
return refused
