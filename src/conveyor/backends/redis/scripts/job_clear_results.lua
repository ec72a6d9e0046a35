-- job_clear_results: a task's result_ttl. Drop the result field of that task's
-- succeeded jobs finished in [after, before), reading one page of the finished-job
-- index (the expiry zset), as job_purge does; the job hashes stay until they expire.
-- KEYS[1] base "{prefix}:"   KEYS[2] expiry zset
-- ARGV[1] task   ARGV[2] finished_after ('' for none)   ARGV[3] finished_before
-- ARGV[4] most results to clear   ARGV[5] index offset of the page   ARGV[6] page size
-- The index is ordered by expiry, not by finished_at (which a caller may set), so the
-- caller walks it page by page; state, task and finished_at are re-read here.
-- Returns {cleared, entries read}.
local task, before, limit = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local after = tonumber(ARGV[2])
local first = tonumber(ARGV[5])
local members = redis.call('ZRANGE', KEYS[2], first, first + tonumber(ARGV[6]) - 1)
local cleared, read = 0, 0
for _, m in ipairs(members) do
  if cleared >= limit then break end
  read = read + 1
  local state, _, id = parse_expiry_member(m)
  if state == 'succeeded' then
    local key = k_job(id)
    local f = redis.call('HMGET', key, 'state', 'task', 'finished_at', 'result')
    local fin = f[3] and tonumber(f[3])
    if f[1] == 'succeeded' and f[2] == task and f[4] and fin and fin < before
        and (after == nil or fin >= after) then
      redis.call('HDEL', key, 'result')
      cleared = cleared + 1
    end
  end
end
return {cleared, read}
