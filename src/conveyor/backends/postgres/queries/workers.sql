-- The workers' rows (conveyor.backends.sql.workers), the same names on every store.
-- PostgreSQL's heartbeat is stamped with the server's clock (rescues judge it by that
-- clock, whatever the workers' own clocks say).

-- name: worker_heartbeat
INSERT INTO workers (id, host, pid, pid_started, started_at, heartbeat_at, last_fetch_at,
                     queues, concurrency, pool, running)
VALUES (%(id)s, %(host)s, %(pid)s, %(pid_started)s, %(started_at)s,
        extract(epoch from clock_timestamp())::float8, %(last_fetch_at)s, %(queues)s,
        %(concurrency)s, %(pool)s, %(running)s)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at,
    last_fetch_at = COALESCE(excluded.last_fetch_at, workers.last_fetch_at),
    running = excluded.running;
