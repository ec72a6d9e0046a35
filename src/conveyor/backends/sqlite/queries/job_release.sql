-- Graceful shutdown: back to ready, and the attempt is not counted.
UPDATE jobs
SET state = 'queued', attempt = attempt - 1, worker_id = NULL, lease_until = NULL
WHERE id = :id AND token = :token AND state = 'running'
RETURNING attempt + 1 AS attempt, started_at
