-- The rescue's statements (conveyor.backends.sql.rescue), the same names on every store.
-- PostgreSQL's differ from SQLite's: the dead workers are one array (= ANY), and rows
-- are locked, since rescuers, heartbeats and finishes run concurrently.

-- name: worker_lock_lost
-- Lock the lost workers' rows first: a heartbeat arriving now waits for this commit
-- (and then finds its jobs gone), so liveness cannot change under the rescue. SQLite
-- has no such statement: its write transaction already excludes every other writer.
SELECT id FROM workers WHERE heartbeat_at < %(stale_before)s OR id = ANY(%(dead)s)
ORDER BY id FOR UPDATE;

-- name: job_rescue_candidates
-- SKIP LOCKED: a row being finished right now is left to its finish.
SELECT j.id, j.token, j.attempt, j.max_attempts, j.rescues, j.worker_id, j.started_at
FROM jobs AS j
LEFT JOIN workers AS w ON w.id = j.worker_id
WHERE j.state = 'running'
  AND (w.id IS NULL
       OR w.heartbeat_at < %(stale_before)s
       OR j.lease_until < %(stale_before)s
       OR j.worker_id = ANY(%(dead)s))
ORDER BY j.id
FOR UPDATE OF j SKIP LOCKED;

-- name: worker_delete_lost
DELETE FROM workers
WHERE (heartbeat_at < %(stale_before)s OR id = ANY(%(dead)s))
  AND id NOT IN (SELECT worker_id FROM jobs WHERE state = 'running' AND worker_id IS NOT NULL);
