-- job_finished_histogram: count the finished jobs of one time bucket by queue and state.
-- Read-only. The caller pipelines one call per bucket, so Redis is held for one bucket's
-- entries at a time, never for the whole history.
-- KEYS[1] base "{prefix}:"   KEYS[2] expiry zset (score = finish time + result TTL,
--   member "state:len(queue):queue" .. id)
-- ARGV[1] lowest score (inclusive)   ARGV[2] highest score (exclusive)
-- Returns a flat list: queue, state, count, queue, state, count, ...
local members = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '(' .. ARGV[2])
local counts, queues = {}, {}
for _, m in ipairs(members) do
  local state, queue = parse_expiry_member(m)
  local by_state = counts[queue]
  if not by_state then
    by_state = {}
    counts[queue] = by_state
    queues[#queues + 1] = queue
  end
  by_state[state] = (by_state[state] or 0) + 1
end
local out = {}
for _, queue in ipairs(queues) do
  for state, n in pairs(counts[queue]) do
    out[#out + 1] = queue
    out[#out + 1] = state
    out[#out + 1] = n
  end
end
return out
