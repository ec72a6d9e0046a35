-- The workers' rows (conveyor.backends.sql.workers), the same names on every store.
-- MariaDB's heartbeat is stamped with the server's clock, as PostgreSQL's (rescues judge
-- it by that clock); its upsert is ON DUPLICATE KEY UPDATE.

-- name: worker_heartbeat
INSERT INTO workers (id, host, pid, pid_started, started_at, heartbeat_at, last_fetch_at,
                     queues, concurrency, pool, running)
VALUES (%(id)s, %(host)s, %(pid)s, %(pid_started)s, %(started_at)s, UNIX_TIMESTAMP(NOW(6)),
        %(last_fetch_at)s, %(queues)s, %(concurrency)s, %(pool)s, %(running)s)
ON DUPLICATE KEY UPDATE heartbeat_at = VALUES(heartbeat_at),
    last_fetch_at = COALESCE(VALUES(last_fetch_at), last_fetch_at),
    running = VALUES(running);
