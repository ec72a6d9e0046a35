-- Running jobs whose worker is gone: proved dead by the caller (temp table dead_workers),
-- heartbeat older than :stale_before, no worker row at all, or a lease long expired.
SELECT j.id, j.token, j.attempt, j.max_attempts, j.rescues, j.worker_id, j.started_at
FROM jobs AS j
LEFT JOIN workers AS w ON w.id = j.worker_id
WHERE j.state = 'running'
  AND (w.id IS NULL
       OR w.heartbeat_at < :stale_before
       OR j.lease_until < :stale_before
       OR j.worker_id IN (SELECT id FROM dead_workers))
