UPDATE jobs
SET state = 'succeeded', result = :result, finished_at = :finished_at,
    worker_id = NULL, lease_until = NULL
WHERE id = :id AND token = :token AND state = 'running'
