UPDATE jobs
SET state = 'expired', error = :error, reason = :reason, finished_at = :finished_at,
    worker_id = NULL, lease_until = NULL
WHERE id = :id AND token = :token AND state = 'running'
