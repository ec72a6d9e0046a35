-- job_age: priority aging of one queue's ready jobs (App(priority_aging=...)).
-- KEYS[1] base "{prefix}:"
-- ARGV[1] queue   ARGV[2] step (seconds)   ARGV[3] ceiling (priority not exceeded)
-- Derived: job:<id>, ready:<queue>.
-- Each ready job ready for a step or more gains one priority and its run_at moves one
-- step later (the next step counts from now); its ready score follows. Reads the whole
-- ready set of the queue: aging is for queues whose backlog it is meant to reorder.
-- Returns how many jobs gained a priority.
local t = now()
local queue, step, ceiling = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local ready = k_ready(queue)
local aged = 0
for _, id in ipairs(redis.call('ZRANGE', ready, 0, -1)) do
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'priority', 'run_at')
  local priority, run_at = number_or(f[1], 0), number_or(f[2], 0)
  if run_at <= t - step and priority < ceiling then
    redis.call('HSET', key, 'priority', tostring(priority + 1), 'run_at', fmt(run_at + step))
    redis.call('ZADD', ready, ready_score(priority + 1, run_at + step), id)
    aged = aged + 1
  end
end
return aged
