-- The rescue's statements (conveyor.backends.sql.rescue), the same names on every store.
-- MariaDB's differ from PostgreSQL's in two ways. The dead workers travel as one JSON
-- array (%(dead)s) tested with JSON_CONTAINS: there is no array parameter, and an IN
-- list could be long. And the candidates are chosen without joining the workers table:
-- a locking read locks the rows of every table it joins (MariaDB has no FOR UPDATE OF),
-- so a join would lock the LIVE workers' rows too, and their heartbeats would wait on
-- the rescue; a row read by a subquery is not locked by the outer FOR UPDATE.

-- name: worker_lock_lost
-- Lock the lost workers' rows first: a heartbeat arriving now waits for this commit
-- (and then finds its jobs gone), so liveness cannot change under the rescue.
SELECT id FROM workers
WHERE heartbeat_at < %(stale_before)s OR JSON_CONTAINS(%(dead)s, JSON_QUOTE(id))
ORDER BY id FOR UPDATE;

-- name: job_rescue_candidates
-- Running jobs whose worker is gone: proved dead by the caller, no live worker row (none
-- at all, or a heartbeat older than stale_before), or a lease long expired.
-- FOR UPDATE without SKIP LOCKED, unlike PostgreSQL: a row being finished right now is
-- waited for, and then read as its finish left it (no longer running: not a candidate).
-- The rescue must see all of a lost worker's jobs at once: one left out looks like the
-- only job its worker held (poison isolation buries that one, rules.held_alone), and
-- InnoDB locks rows that do NOT match too, for a moment, while a locking read scans
-- them (a claim's SELECT ... FOR UPDATE over a small table scans them all): SKIP LOCKED
-- skipped a dead worker's innocent job so, and it ended dead, "worker lost", under load.
SELECT j.id, j.token, j.attempt, j.max_attempts, j.rescues, j.worker_id, j.started_at
FROM jobs AS j
WHERE j.state = 'running'
  AND (j.lease_until < %(stale_before)s
       OR JSON_CONTAINS(%(dead)s, JSON_QUOTE(j.worker_id))
       OR NOT EXISTS (SELECT 1 FROM workers AS w
                      WHERE w.id = j.worker_id AND w.heartbeat_at >= %(stale_before)s))
ORDER BY j.id
FOR UPDATE;

-- name: worker_delete_lost
-- The lost workers' rows go once no running job names them.
DELETE FROM workers
WHERE (heartbeat_at < %(stale_before)s OR JSON_CONTAINS(%(dead)s, JSON_QUOTE(id)))
  AND id NOT IN (SELECT worker_id FROM jobs WHERE state = 'running' AND worker_id IS NOT NULL);
