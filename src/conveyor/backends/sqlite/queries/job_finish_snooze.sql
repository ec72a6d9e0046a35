-- conveyor.Snooze: back to scheduled at :run_at and the attempt given back (not an error).
UPDATE jobs
SET state = 'scheduled', run_at = :run_at, attempt = attempt - 1,
    worker_id = NULL, lease_until = NULL
WHERE id = :id AND token = :token AND state = 'running'
