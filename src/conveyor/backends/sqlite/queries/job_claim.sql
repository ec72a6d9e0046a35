-- Claim up to :limit ready jobs of one queue: one statement over the jobs_ready partial
-- index. The token is the fencing token of this claim; the attempt counts here.
-- A paused queue (queues.paused = 1) yields nothing: checked in the same statement, so
-- a pause is obeyed by every worker at its next claim, and survives restarts.
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
          run_at, started_at, rescues, priority, headers, expires_at
