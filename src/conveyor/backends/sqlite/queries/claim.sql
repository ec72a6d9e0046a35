-- The claim's statements (conveyor.backends.sql.claim), the same names on every store.
-- SQLite's differ from PostgreSQL's: no row locks (BEGIN IMMEDIATE holds the whole
-- database, so no SKIP LOCKED), and the clock is the caller's (:now).

-- name: job_promote_due
-- Scheduled jobs whose time has come become ready (reads the jobs_scheduled index).
-- Its row count is how many (Dialect.promote_answers is False: SQLite's work_wait reads
-- the next due time itself).
UPDATE jobs SET state = 'queued' WHERE state = 'scheduled' AND run_at <= :now;

-- name: job_claim
-- Claim up to :limit ready jobs of one queue: one statement over the jobs_ready partial
-- index. The token is the fencing token of this claim; the attempt counts here.
-- A paused queue (queues.paused = 1) yields nothing: checked in the same statement, so
-- a pause is obeyed by every worker at its next claim, and survives restarts.
-- limit_key last: the engine admits jobs that have one (conveyor.backends.sql.limits).
UPDATE jobs
SET state = 'running',
    worker_id = :worker_id,
    token = token + 1,
    attempt = attempt + 1,
    started_at = :now,
    lease_until = :now + lease
WHERE state = 'queued'
  AND id IN (
    SELECT id FROM jobs
    WHERE state = 'queued' AND queue = :queue
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)
    ORDER BY priority DESC, run_at, id
    LIMIT :limit
  )
RETURNING id, task, queue, payload, attempt, max_attempts, token, timeout, lease,
          run_at, started_at, rescues, priority, headers, expires_at, limit_key;

-- name: job_claim_ring
-- One chunk of a worker's many queues (conveyor.backends.queue_ring): the first job of
-- each non-empty, unpaused queue named in :queues (a JSON array), in the array's order,
-- up to :limit jobs; one statement however many queues. CROSS JOIN keeps json_each the
-- outer loop, so the LIMIT stops the walk early, and each queue is one probe of the
-- jobs_ready index (its first job, or none), never a scan of a queue's backlog.
UPDATE jobs
SET state = 'running',
    worker_id = :worker_id,
    token = token + 1,
    attempt = attempt + 1,
    started_at = :now,
    lease_until = :now + lease
WHERE state = 'queued'
  AND id IN (
    SELECT j.id FROM json_each(:queues) AS c
    CROSS JOIN jobs AS j ON j.id = (
      SELECT id FROM jobs
      WHERE state = 'queued' AND queue = c.value
      ORDER BY priority DESC, run_at, id
      LIMIT 1
    )
    WHERE NOT EXISTS (SELECT 1 FROM queues WHERE name = c.value AND paused = 1)
    LIMIT :limit
  )
RETURNING id, task, queue, payload, attempt, max_attempts, token, timeout, lease,
          run_at, started_at, rescues, priority, headers, expires_at, limit_key;
