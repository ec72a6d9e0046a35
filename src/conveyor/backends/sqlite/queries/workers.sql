-- The workers' rows (conveyor.backends.sql.workers), the same names on every store.
-- SQLite's heartbeat is stamped with the caller's clock (:now).

-- name: worker_heartbeat
INSERT INTO workers (id, host, pid, pid_started, started_at, heartbeat_at, last_fetch_at,
                     queues, concurrency, pool, running)
VALUES (:id, :host, :pid, :pid_started, :started_at, :now, :last_fetch_at, :queues,
        :concurrency, :pool, :running)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at,
    last_fetch_at = COALESCE(excluded.last_fetch_at, workers.last_fetch_at),
    running = excluded.running;
