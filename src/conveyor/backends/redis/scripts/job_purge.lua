-- job_purge: delete finished jobs finished before a time, reading one page of the
-- finished-job index (the expiry zset, which holds every finished job).
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] expiry zset
-- KEYS[4] counts hash
-- ARGV[1] finished_before (decimal string)   ARGV[2] most jobs to delete
-- ARGV[3] index offset of the page   ARGV[4] page size   ARGV[5..] states to purge
-- Derived: job:<id>, attempts:<id>, logs:<id>, done:<id>.
-- The index is ordered by expiry, not by finished_at (which a caller may set), so the
-- caller walks it page by page; state and finished_at are re-read here, atomically with
-- the delete, so a job retried meanwhile is never purged.
-- Returns {deleted, entries read}.
local before, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = tonumber(ARGV[3])
local states = {}
for i = 5, #ARGV do states[ARGV[i]] = true end
local members = redis.call('ZRANGE', KEYS[3], first, first + tonumber(ARGV[4]) - 1)
local deleted, read = 0, 0
for _, m in ipairs(members) do
  if deleted >= limit then break end
  read = read + 1
  local state, queue, id = parse_expiry_member(m)
  if states[state] then
    local key = k_job(id)
    local f = redis.call('HMGET', key, 'state', 'queue', 'finished_at', 'watched')
    if f[1] == state and f[2] == queue and number_or(f[3], math.huge) < before then
      redis.call('DEL', key, k_attempts(id), k_logs(id), k_steps(id), k_events(id))
      redis.call('ZREM', KEYS[2], id)
      redis.call('ZREM', KEYS[3], m)
      count(state, queue, -1)
      notify_done(id, f[4])
      deleted = deleted + 1
    end
  end
end
flush_counts(KEYS[4])
return {deleted, read}
