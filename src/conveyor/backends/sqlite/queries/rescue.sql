-- The rescue's statements (conveyor.backends.sql.rescue), the same names on every store
-- (PostgreSQL's also lock: see its file). The caller's dead workers travel as one JSON
-- array (:dead) that json_each reads: SQLite has no array parameter, and an IN list
-- could pass its variable limit.

-- name: job_rescue_candidates
-- Running jobs whose worker is gone: proved dead by the caller (:dead), heartbeat older
-- than :stale_before, no worker row at all, or a lease long expired.
SELECT j.id, j.token, j.attempt, j.max_attempts, j.rescues, j.worker_id, j.started_at
FROM jobs AS j
LEFT JOIN workers AS w ON w.id = j.worker_id
WHERE j.state = 'running'
  AND (w.id IS NULL
       OR w.heartbeat_at < :stale_before
       OR j.lease_until < :stale_before
       OR j.worker_id IN (SELECT value FROM json_each(:dead)))
ORDER BY j.id;

-- name: worker_delete_lost
-- The lost workers' rows go once no running job names them.
DELETE FROM workers
WHERE (heartbeat_at < :stale_before OR id IN (SELECT value FROM json_each(:dead)))
  AND id NOT IN (SELECT worker_id FROM jobs WHERE state = 'running' AND worker_id IS NOT NULL);
