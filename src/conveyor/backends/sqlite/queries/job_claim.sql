-- Claim up to :limit ready jobs of one queue: one statement over the jobs_ready partial
-- index. The token is the fencing token of this claim; the attempt counts here.
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
    ORDER BY priority DESC, run_at, id
    LIMIT :limit
  )
RETURNING id, task, queue, payload, attempt, max_attempts, token, timeout, lease,
          run_at, started_at, rescues, priority
