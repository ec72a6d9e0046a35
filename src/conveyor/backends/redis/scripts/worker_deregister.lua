-- worker_deregister: a worker leaves (its running jobs, if any, become rescuable).
-- KEYS[1] base "{prefix}:"   KEYS[2] workers zset
-- ARGV[1] worker id
-- Derived: worker:<id>.
redis.call('DEL', k_worker(ARGV[1]))
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
