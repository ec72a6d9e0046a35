-- job_prune: drop index entries of finished jobs whose hash expired (result TTL).
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] expiry zset
-- KEYS[4] counts hash
-- ARGV[1] maximum entries handled by this call
-- Derived: job:<id>.
-- Redis expires the hashes on its own; this keeps job_list and queue_stats honest.
-- Returns the number of entries removed.
local ts = fmt(now())
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ts, 'LIMIT', 0, tonumber(ARGV[1]))
local removed = 0
for _, member in ipairs(due) do
  local state, queue, id = parse_expiry_member(member)
  -- EXPIRE has second resolution: an entry may come due a moment before its hash goes.
  if redis.call('EXISTS', k_job(id)) == 0 then
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[3], member)
    count(state, queue, -1)
    removed = removed + 1
  end
end
flush_counts(KEYS[4])
return removed
