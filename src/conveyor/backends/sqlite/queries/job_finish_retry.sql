UPDATE jobs
SET state = 'scheduled', run_at = :run_at, error = :error, reason = :reason,
    worker_id = NULL, lease_until = NULL
WHERE id = :id AND token = :token AND state = 'running'
