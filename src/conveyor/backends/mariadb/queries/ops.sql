-- MariaDB's text of the statements that differ by more than spelling (the same role
-- names on every store; see the engine module that reads each). Named parameters are
-- PyMySQL's %(name)s.

-- name: job_promote_due
-- Scheduled jobs whose time has come become ready; its row count is how many.
-- SKIP LOCKED is not allowed in an UPDATE: a promotion racing another waits for it
-- (both promote the same due rows; the second finds them queued and skips them).
UPDATE jobs SET state = 'queued' WHERE state = 'scheduled' AND run_at <= %(now)s;

-- name: job_insert_flow
-- A job with flow-control columns (unique key, parents, limit key). IGNORE on the
-- jobs_unique index: a row count of 0 is "another transaction holds the key"
-- (sql/flow.py), as PostgreSQL's ON CONFLICT DO NOTHING.
INSERT IGNORE INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, unique_key, unique_until, waiting_on, pipe,
                  limit_key, reason, finished_at, headers, expires_at)
VALUES (%(id)s, %(task)s, %(queue)s, %(state)s, %(priority)s, %(payload)s, %(max_attempts)s,
        %(run_at)s, %(created_at)s, %(timeout)s, %(lease)s, %(unique_key)s, %(unique_until)s,
        %(waiting_on)s, %(pipe)s, %(limit_key)s, %(reason)s, %(finished_at)s,
        %(headers)s, %(expires_at)s);

-- name: queue_pause
-- Pause or resume a queue: an upsert of its flag, stamped %(now)s.
INSERT INTO queues (name, paused, updated_at) VALUES (%(queue)s, %(paused)s, %(now)s)
ON DUPLICATE KEY UPDATE paused = VALUES(paused), updated_at = VALUES(updated_at);

-- name: queue_stats
-- (queue, state, jobs, oldest run_at) per queue and state with jobs: one scan of jobs.
SELECT queue, state, COUNT(*), MIN(run_at) FROM jobs GROUP BY queue, state;

-- name: job_finished_histogram
-- Jobs finished since %(since)s per %(bucket_s)s-second bucket, queue and state.
SELECT CAST(FLOOR((finished_at - %(since)s) / %(bucket_s)s) AS SIGNED) AS bucket, queue,
       state, COUNT(*)
FROM jobs
WHERE state IN ('succeeded', 'dead', 'cancelled', 'expired') AND finished_at >= %(since)s
GROUP BY bucket, queue, state
ORDER BY bucket, queue, state;

-- name: job_ring_candidates
-- The claim of one chunk of a worker's many queues (conveyor.backends.queue_ring), as
-- MariaDB can say it without UPDATE ... RETURNING: the id of the first job of each
-- non-empty, unpaused queue named in %(queues)s (JSON array text), in the array's
-- order, up to %(limit)s; the engine then locks (SKIP LOCKED), marks and reads them.
-- Each queue is one probe of jobs_ready; JSON_TABLE yields the array in order, and no
-- ORDER BY, so that the LIMIT ends the walk early.
SELECT id FROM (
  SELECT (SELECT j.id FROM jobs AS j
          WHERE j.state = 'queued' AND j.queue = c.name
          ORDER BY j.priority DESC, j.run_at, j.id
          LIMIT 1) AS id
  FROM JSON_TABLE(%(queues)s, '$[*]' COLUMNS (
         name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS c
  WHERE NOT EXISTS (SELECT 1 FROM queues AS p WHERE p.name = c.name AND p.paused = 1)
) AS firsts
WHERE id IS NOT NULL
LIMIT %(limit)s;
