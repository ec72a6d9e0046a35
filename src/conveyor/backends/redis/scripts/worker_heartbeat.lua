-- worker_heartbeat: register a worker or prove it alive (server time).
-- KEYS[1] base "{prefix}:"   KEYS[2] workers zset
-- ARGV: id, host, pid, pid_started+, started_at, last_fetch_at+, queues (JSON list),
--   concurrency, pool, running   (+ number: '' NULL)
-- Derived: worker:<id>.
-- Like SQLite's upsert: the first beat writes every field; later beats update only
-- heartbeat_at, running and last_fetch_at (kept when not given).
local ts = fmt(now())
local id = ARGV[1]
local key = k_worker(id)
if redis.call('EXISTS', key) == 0 then
  hset_nullable(key, {'id', id, 'host', ARGV[2], 'pid', ARGV[3], 'pid_started', opt_num(ARGV[4]),
    'started_at', ARGV[5], 'heartbeat_at', ts, 'last_fetch_at', opt_num(ARGV[6]),
    'queues', ARGV[7], 'concurrency', ARGV[8], 'pool', ARGV[9], 'running', ARGV[10]})
else
  redis.call('HSET', key, 'heartbeat_at', ts, 'running', ARGV[10])
  if ARGV[6] ~= '' then redis.call('HSET', key, 'last_fetch_at', ARGV[6]) end
end
redis.call('ZADD', KEYS[2], ts, id)
return ts
